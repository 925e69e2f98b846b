"""Opening a Hugging Face model folder (`save_pretrained`: config.json with a model_type, model.safetensors) with a
tokenizer.json beside it, for the checkpoint registry (`FolderReader`, inference.core.folders).

Special ids come from config.json: pad_token_id, bos_token_id, eos_token_id (a list of EOS ids: the first); a
model without a pad id (GPT-2) pads with EOS, one without a BOS id starts its prompts with EOS. The unknown
token is the tokenizer's own, where it has one. Nothing is fetched: transformers loads the folder with
local_files_only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from tokenizers import Tokenizer
from torch import nn

from inference.core.capabilities import FamilyConfig
from inference.core.checkpoint import OUTSIDE_META, WEIGHTS_DTYPES, cast_copy, write_metrics
from inference.core.tokenizer import SpecialIds, TextTokenizer, unknown_id
from inference.families.hugging_face.architectures import ARCHITECTURES, Architecture, architecture, read_sizes
from inference.families.hugging_face.model import (
    FAMILY_NAME,
    HookedCausalLM,
    HuggingFaceConfig,
    refuse_unsupported,
    transformers_config,
)
from inference.families.hugging_face.translator_architectures import (
    TRANSLATORS,
    TranslatorArchitecture,
    read_translator_sizes,
)
from inference.families.hugging_face.translator_model import FAMILY_NAME as TRANSLATOR_FAMILY_NAME
from inference.families.hugging_face.translator_model import HookedTranslator, HuggingFaceTranslatorConfig

WEIGHTS = "model.safetensors"  # one file; never pytorch_model.bin, which would be unpickled
SHARDED_INDEX = "model.safetensors.index.json"
TOKENIZER = "tokenizer.json"
NOT_STATED = "not stated"  # a translator's source language where its memlens.json names none


class HuggingFaceReader:
    """The FolderReader of Hugging Face folders: every method raises ValueError saying what is missing or
    unsupported."""

    format = "Hugging Face"
    families = (
        FAMILY_NAME,
        TRANSLATOR_FAMILY_NAME,
    )  # the Hugging Face models trained here are written as Hugging Face folders
    files = ("config.json", WEIGHTS, TOKENIZER, "metrics.json", "generation_config.json", OUTSIDE_META)

    def reads(self, config_json: dict[str, Any]) -> bool:
        return "model_type" in config_json and "format_version" not in config_json

    def config(self, folder: Path, config_json: dict[str, Any]) -> HuggingFaceConfig | HuggingFaceTranslatorConfig:
        model_type = config_json.get("model_type")
        if not (folder / WEIGHTS).is_file() and (folder / SHARDED_INDEX).is_file():
            raise ValueError(f"sharded weights ({SHARDED_INDEX}) are not read yet: save the model in one {WEIGHTS}")
        if isinstance(model_type, str) and model_type in TRANSLATORS:
            return self._translator_config(folder, config_json, TRANSLATORS[model_type])
        if model_type not in ARCHITECTURES:
            raise ValueError(
                f"model_type {model_type!r} is not supported; supported: causal language models "
                f"{', '.join(ARCHITECTURES)}, translators {', '.join(TRANSLATORS)}"
            )
        arch = architecture(model_type)
        hf_config, vocab_size, (pad, bos, eos) = _checked(folder, config_json, arch)
        sizes = read_sizes(arch, hf_config)
        return HuggingFaceConfig(
            model_type=arch.model_type,
            vocab_size=vocab_size,
            pad_id=eos if pad is None else pad,
            bos_id=eos if bos is None else bos,
            eos_id=eos,
            hf_config=dict(config_json),
            n_layers=sizes["n_layers"],
            n_heads=sizes["n_heads"],
            d_model=sizes["d_model"],
            d_ff=sizes["d_ff"],
            max_positions=sizes["max_positions"],
        )

    def _translator_config(
        self, folder: Path, config_json: dict[str, Any], arch: TranslatorArchitecture
    ) -> HuggingFaceTranslatorConfig:
        """Outputs are decoded from the decoder start token (config.json's decoder_start_token_id, else the pad
        token), which stands where MemLens's own translators have BOS."""
        hf_config, vocab_size, (pad, _, eos) = _checked(folder, config_json, arch)
        if pad is None:
            raise ValueError("config.json names no pad_token_id: MemLens pads sources with it")
        start = _token_id(hf_config, "decoder_start_token_id")
        sizes = read_translator_sizes(arch, hf_config)
        return HuggingFaceTranslatorConfig(
            model_type=arch.model_type,
            vocab_size=vocab_size,
            pad_id=pad,
            bos_id=pad if start is None else start,
            eos_id=eos,
            hf_config=dict(config_json),
            n_encoder_layers=sizes["n_encoder_layers"],
            n_decoder_layers=sizes["n_decoder_layers"],
            n_heads=sizes["n_heads"],
            d_model=sizes["d_model"],
            d_ff=sizes["d_ff"],
            max_positions=sizes["max_positions"],
        )

    def meta(self, config: FamilyConfig) -> dict[str, Any]:
        """A translator reads a natural language, which its folder does not name: "not stated" unless memlens.json
        beside it says ("source_language": "German"; "example": a sentence its pages open on)."""
        return {"source_language": NOT_STATED} if isinstance(config, HuggingFaceTranslatorConfig) else {}

    def check(self, folder: Path, config: FamilyConfig) -> None:
        """The weights' header reads, the tokenizer loads and its ids fit the model's vocabulary."""
        try:
            with safe_open(str(folder / WEIGHTS), framework="pt") as weights:
                names = list(weights.keys())
        except Exception as error:  # a missing file, or a bad header (safetensors' own error is a plain Exception)
            raise ValueError(f"{WEIGHTS} is unreadable: {error}") from None
        if not names:
            raise ValueError(f"{WEIGHTS} holds no tensors")
        tokenizer = _tokenizer(folder)
        if tokenizer.get_vocab_size() > config.vocab_size:
            raise ValueError(
                f"{TOKENIZER} has {tokenizer.get_vocab_size()} tokens; the model's vocabulary has {config.vocab_size}"
            )

    def load(self, folder: Path, config: FamilyConfig, device: torch.device) -> tuple[nn.Module, TextTokenizer]:
        self.check(folder, config)
        from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

        if isinstance(config, HuggingFaceTranslatorConfig):
            auto: Any = AutoModelForSeq2SeqLM
        elif isinstance(config, HuggingFaceConfig):
            auto = AutoModelForCausalLM
        else:
            raise ValueError(f"a {type(config).__name__} is not a Hugging Face model's config")
        try:
            hf = auto.from_pretrained(folder, attn_implementation="eager", local_files_only=True, dtype=torch.float32)
        except (OSError, RuntimeError, ValueError) as error:
            raise ValueError(f"transformers cannot load the weights: {error}") from None
        if hf.config.model_type != config.model_type:
            raise ValueError(f"transformers built a {hf.config.model_type} model, not a {config.model_type} one")
        model = (
            HookedTranslator(hf, config)
            if isinstance(config, HuggingFaceTranslatorConfig)
            else HookedCausalLM(hf, config)
        )
        tokenizer = _tokenizer(folder)
        special = SpecialIds(config.pad_id, config.bos_id, config.eos_id, unknown_id(tokenizer))
        return model.to(device), TextTokenizer(tokenizer, special)

    def save(
        self, folder: Path, model: nn.Module, tokenizer: TextTokenizer, meta: dict, metrics: dict, weights_dtype: str
    ) -> None:
        """`save_pretrained`'s config.json, model.safetensors and generation_config.json, with our tokenizer.json,
        metrics.json and how the model was trained (OUTSIDE_META); float16 weights are read back as float32."""
        stored = model if weights_dtype == "float32" else cast_copy(model, WEIGHTS_DTYPES[weights_dtype])
        if not isinstance(stored, (HookedCausalLM, HookedTranslator)):
            raise ValueError(f"a {type(model).__name__} is not a Hugging Face model MemLens wraps")
        stored.hf.save_pretrained(folder)
        tokenizer.save(folder / TOKENIZER)
        write_metrics(folder, metrics)
        (folder / OUTSIDE_META).write_text(json.dumps(meta, indent=2) + "\n")


def _checked(
    folder: Path, config_json: dict[str, Any], arch: Architecture | TranslatorArchitecture
) -> tuple[Any, int, tuple[int | None, int | None, int]]:
    """(the transformers config, the vocabulary size, (pad, bos, eos) ids) of a folder of `arch`; ValueError where
    a file is missing, transformers refuses the config, it is a variant MemLens does not read, or it names no
    vocabulary or EOS."""
    for name in (WEIGHTS, TOKENIZER):
        if not (folder / name).is_file():
            raise ValueError(f"{name} is missing")
    hf_config = transformers_config(arch.model_type, config_json)
    refuse_unsupported(arch, hf_config)
    vocab_size = getattr(hf_config, "vocab_size", None)
    if not isinstance(vocab_size, int) or vocab_size < 1:
        raise ValueError(f"the {arch.model_type} config names no vocab_size")
    eos = _token_id(hf_config, "eos_token_id")
    if eos is None:
        raise ValueError("config.json names no eos_token_id: MemLens stops an output there")
    return hf_config, vocab_size, (_token_id(hf_config, "pad_token_id"), _token_id(hf_config, "bos_token_id"), eos)


def _token_id(hf_config: Any, attribute: str) -> int | None:
    """A special token's id of the config: None where it names none; a list's first id."""
    value = getattr(hf_config, attribute, None)
    if isinstance(value, list) and value:
        value = value[0]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"config.json's {attribute} is {value!r}, not a token id")
    return value


def _tokenizer(folder: Path) -> Tokenizer:
    try:
        return Tokenizer.from_file(str(folder / TOKENIZER))
    except FileNotFoundError:
        raise ValueError(f"{TOKENIZER} is missing") from None
    except Exception as error:  # the tokenizers library raises plain Exceptions
        raise ValueError(f"{TOKENIZER} does not load: {error}") from None


READER = HuggingFaceReader()
