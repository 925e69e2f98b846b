"""Model folders that are not MemLens checkpoints: a family that opens another format (a Hugging Face folder saved
with `save_pretrained`) registers a `FolderReader`, and the checkpoint registry asks the readers about any folder
whose config.json has no MemLens `format_version`. A reader also writes that format, for the models of its families
trained here (inference.core.checkpoint.save_folder). The registry still does the rest: names, the loaded-models
memory budget, and a broken folder listed with the reader's reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from inference.core.capabilities import FamilyConfig
from inference.core.tokenizer import TextTokenizer


class FolderReader(Protocol):
    """Opens the model folders of one outside format. Every method raises ValueError saying what is missing or
    unsupported, in words a person can act on."""

    @property
    def format(self) -> str: ...  # the format in words, e.g. "Hugging Face"

    def reads(self, config_json: dict[str, Any]) -> bool: ...  # a folder of this format, from its config.json

    def config(self, folder: Path, config_json: dict[str, Any]) -> FamilyConfig: ...  # the family config

    def check(self, folder: Path, config: FamilyConfig) -> None: ...  # cheap: the weights' header, the tokenizer

    def meta(self, config: FamilyConfig) -> dict[str, Any]: ...  # what the folder's own meta file may leave out

    def load(self, folder: Path, config: FamilyConfig, device: torch.device) -> tuple[nn.Module, TextTokenizer]: ...

    @property
    def families(self) -> tuple[str, ...]: ...  # the families whose trained models are written in this format

    @property
    def files(self) -> tuple[str, ...]: ...  # the files `save` writes

    def save(
        self, folder: Path, model: nn.Module, tokenizer: TextTokenizer, meta: dict, metrics: dict, weights_dtype: str
    ) -> None: ...  # a trained model's folder in this format (weights_dtype "float16": rounded weights)


_READERS: list[FolderReader] = []


def register_folder_reader(reader: FolderReader) -> FolderReader:
    if reader not in _READERS:
        _READERS.append(reader)
    return reader


def folder_reader_for(config_json: dict[str, Any]) -> FolderReader | None:
    """The reader of a folder with this config.json; None where no registered reader reads it (call
    `load_families` first: families register their readers when imported)."""
    return next((reader for reader in _READERS if reader.reads(config_json)), None)


def folder_writer_for(family: str) -> FolderReader | None:
    """The reader that also writes the trained models of `family` in its format; None: MemLens's own checkpoint."""
    return next((reader for reader in _READERS if family in reader.families), None)
