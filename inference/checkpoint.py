"""Checkpoint folders and the registry that serves them.

A checkpoint is a folder:

    config.json        {"format_version": 1, "model": {...config...}, "meta": {...}}
    model.safetensors  weights (shared weights stored once)
    tokenizer.json     Hugging Face tokenizers format
    metrics.json       training curve, BLEU, lesion tables (free-form JSON object)

Loading validates every file and never unpickles. The registry scans a root
folder, checks each entry cheaply (JSON parses, files exist, tensor names and
shapes in the safetensors header match the config), loads models lazily, and
lists a broken entry with its reason instead of raising.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_model, save_model

from inference.models import build_model, config_from_dict
from inference.models.memory_transformer import MemoryTransformer, MemoryTransformerConfig
from inference.tokenizer import TextTokenizer

FORMAT_VERSION = 1
FILES = ("config.json", "model.safetensors", "tokenizer.json", "metrics.json")


class CheckpointError(Exception):
    """A checkpoint folder that cannot be used; the message says why."""


@dataclass
class LoadedModel:
    """A model ready to run: weights on a device, its tokenizer and records."""

    name: str
    model: MemoryTransformer
    tokenizer: TextTokenizer
    meta: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)

    @property
    def config(self) -> MemoryTransformerConfig:
        return self.model.config

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


def select_device(setting: str | None = None) -> torch.device:
    """"auto" (default; also env MEMLENS_DEVICE) picks CUDA when present, else CPU."""
    setting = setting or os.environ.get("MEMLENS_DEVICE") or "auto"
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(setting)


def save_checkpoint(folder: str | Path, model: MemoryTransformer, tokenizer: TextTokenizer, meta: dict | None = None, metrics: dict | None = None) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = {"format_version": FORMAT_VERSION, "model": asdict(model.config), "meta": meta or {}}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    save_model(model, str(folder / "model.safetensors"))
    tokenizer.save(folder / "tokenizer.json")
    (folder / "metrics.json").write_text(json.dumps(metrics or {}, indent=2) + "\n")
    return folder


def read_json_object(path: Path) -> dict:
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{path.name} is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path.name} is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path.name} must hold a JSON object")
    return value


def read_config(folder: Path) -> tuple[MemoryTransformerConfig, dict]:
    """(model config, meta) from config.json, validated."""
    raw = read_json_object(folder / "config.json")
    if raw.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"config.json has format_version {raw.get('format_version')!r}; expected {FORMAT_VERSION}")
    try:
        config = config_from_dict(raw.get("model") or {})
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"config.json has an invalid model config: {error}") from None
    return config, raw.get("meta") or {}


def check_weights(folder: Path, config: MemoryTransformerConfig) -> None:
    """Compare the safetensors header with the shapes the config implies,
    without reading the weights."""
    path = folder / "model.safetensors"
    if not path.exists():
        raise CheckpointError("model.safetensors is missing")
    with torch.device("meta"):
        expected = {name: tuple(p.shape) for name, p in build_model(config).named_parameters()}
    try:
        with safe_open(str(path), framework="pt") as stored:
            found = {name: tuple(stored.get_slice(name).get_shape()) for name in stored.keys()}
    except Exception as error:  # safetensors raises its own error types for corrupt headers
        raise CheckpointError(f"model.safetensors cannot be read: {error}") from None
    missing = sorted(set(expected) - set(found))
    if missing:
        raise CheckpointError(f"model.safetensors lacks {len(missing)} tensors, e.g. {missing[0]}")
    for name, shape in expected.items():
        if found[name] != shape:
            raise CheckpointError(f"shape mismatch for {name}: file has {list(found[name])}, config implies {list(shape)}")


def load_tokenizer(folder: Path, config: MemoryTransformerConfig) -> TextTokenizer:
    path = folder / "tokenizer.json"
    if not path.exists():
        raise CheckpointError("tokenizer.json is missing")
    try:
        tokenizer = TextTokenizer.load(path)
    except Exception as error:  # tokenizers raises a bare Exception on malformed files
        raise CheckpointError(f"tokenizer.json cannot be loaded: {error}") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"tokenizer has {tokenizer.vocab_size} tokens but the model config says {config.vocab_size}")
    return tokenizer


def load_checkpoint(folder: str | Path, device: torch.device | str | None = None) -> LoadedModel:
    """Load and validate a checkpoint folder; raises CheckpointError."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a folder")
    config, meta = read_config(folder)
    check_weights(folder, config)
    tokenizer = load_tokenizer(folder, config)
    metrics = read_json_object(folder / "metrics.json")
    model = build_model(config)
    load_model(model, str(folder / "model.safetensors"), strict=True)  # names, shapes and size were checked above
    model.to(select_device(str(device)) if device is not None else select_device()).eval()
    return LoadedModel(folder.name, model, tokenizer, meta, metrics)


@dataclass
class RegistryEntry:
    name: str
    path: Path
    config: MemoryTransformerConfig | None = None
    meta: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    error: str | None = None  # why the entry cannot be used

    @property
    def ok(self) -> bool:
        return self.error is None


class CheckpointRegistry:
    """All checkpoint folders under a root; models load on first use."""

    def __init__(self, root: str | Path, device: torch.device | str | None = None):
        self.root = Path(root)
        self.device = select_device(str(device)) if device is not None else select_device()
        self._loaded: dict[str, LoadedModel] = {}
        self._lock = threading.Lock()
        self.entries: dict[str, RegistryEntry] = {}
        self.scan()

    def scan(self) -> None:
        entries = {}
        folders = sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")) if self.root.is_dir() else []
        for folder in folders:
            entries[folder.name] = self._check(folder)
        self.entries = entries

    @staticmethod
    def _check(folder: Path) -> RegistryEntry:
        entry = RegistryEntry(folder.name, folder)
        try:
            entry.config, entry.meta = read_config(folder)
            check_weights(folder, entry.config)
            entry.metrics = read_json_object(folder / "metrics.json")
            if not (folder / "tokenizer.json").exists():
                raise CheckpointError("tokenizer.json is missing")
        except CheckpointError as error:
            entry.error = str(error)
        return entry

    def available(self) -> list[str]:
        return [name for name, entry in self.entries.items() if entry.ok]

    def broken(self) -> dict[str, str]:
        return {name: entry.error for name, entry in self.entries.items() if not entry.ok}

    def get(self, name: str) -> LoadedModel:
        """The loaded model; KeyError if unknown, CheckpointError if broken."""
        entry = self.entries.get(name)
        if entry is None:
            raise KeyError(name)
        if not entry.ok:
            raise CheckpointError(f"checkpoint {name!r} is unavailable: {entry.error}")
        with self._lock:
            if name not in self._loaded:
                try:
                    self._loaded[name] = load_checkpoint(entry.path, self.device)
                except CheckpointError as error:
                    entry.error = str(error)
                    raise
            return self._loaded[name]
