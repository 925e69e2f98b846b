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
from inference.core.checkpoint import OUTSIDE_META, WEIGHTS_DTYPES, cast_copy
from inference.core.tokenizer import SpecialIds, TextTokenizer, unknown_id
from inference.families.hugging_face.architectures import architecture, read_sizes
from inference.families.hugging_face.model import (
    FAMILY,
    HookedCausalLM,
    HuggingFaceConfig,
    refuse_unsupported,
    transformers_config,
)

WEIGHTS = "model.safetensors"  # one file; never pytorch_model.bin, which would be unpickled
SHARDED_INDEX = "model.safetensors.index.json"
TOKENIZER = "tokenizer.json"


class HuggingFaceReader:
    """The FolderReader of Hugging Face folders: every method raises ValueError saying what is missing or
    unsupported."""

    format = "Hugging Face"
    family = FAMILY  # the Hugging Face models trained here are written as Hugging Face folders
    files = ("config.json", WEIGHTS, TOKENIZER, "metrics.json", "generation_config.json", OUTSIDE_META)

    def reads(self, config_json: dict[str, Any]) -> bool:
        return "model_type" in config_json and "format_version" not in config_json

    def config(self, folder: Path, config_json: dict[str, Any]) -> HuggingFaceConfig:
        model_type = config_json.get("model_type")
        arch = architecture(model_type)  # ValueError naming the supported ones
        if not (folder / WEIGHTS).is_file() and (folder / SHARDED_INDEX).is_file():
            raise ValueError(f"sharded weights ({SHARDED_INDEX}) are not read yet: save the model in one {WEIGHTS}")
        for name in (WEIGHTS, TOKENIZER):
            if not (folder / name).is_file():
                raise ValueError(f"{name} is missing")
        hf_config = transformers_config(arch.model_type, config_json)
        refuse_unsupported(arch, hf_config)
        sizes = read_sizes(arch, hf_config)
        vocab_size = getattr(hf_config, "vocab_size", None)
        if not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"the {arch.model_type} config names no vocab_size")
        eos = _token_id(hf_config, "eos_token_id")
        if eos is None:
            raise ValueError("config.json names no eos_token_id: MemLens stops a continuation there")
        bos = _token_id(hf_config, "bos_token_id")
        pad = _token_id(hf_config, "pad_token_id")
        return HuggingFaceConfig(
            model_type=arch.model_type,
            vocab_size=vocab_size,
            pad_id=eos if pad is None else pad,
            bos_id=eos if bos is None else bos,
            eos_id=eos,
            n_layers=sizes["n_layers"],
            n_heads=sizes["n_heads"],
            d_model=sizes["d_model"],
            d_ff=sizes["d_ff"],
            max_positions=sizes["max_positions"],
            hf_config=dict(config_json),
        )

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

    def load(self, folder: Path, config: FamilyConfig, device: torch.device) -> tuple[HookedCausalLM, TextTokenizer]:
        if not isinstance(config, HuggingFaceConfig):
            raise ValueError(f"a {type(config).__name__} is not a Hugging Face model's config")
        self.check(folder, config)
        from transformers import AutoModelForCausalLM

        try:
            hf = AutoModelForCausalLM.from_pretrained(
                folder, attn_implementation="eager", local_files_only=True, dtype=torch.float32
            )
        except (OSError, RuntimeError) as error:
            raise ValueError(f"transformers cannot load the weights: {error}") from None
        if hf.config.model_type != config.model_type:
            raise ValueError(f"transformers built a {hf.config.model_type} model, not a {config.model_type} one")
        model = HookedCausalLM(hf, config).to(device)
        tokenizer = _tokenizer(folder)
        special = SpecialIds(config.pad_id, config.bos_id, config.eos_id, unknown_id(tokenizer))
        return model, TextTokenizer(tokenizer, special)

    def save(
        self, folder: Path, model: nn.Module, tokenizer: TextTokenizer, meta: dict, metrics: dict, weights_dtype: str
    ) -> None:
        """`save_pretrained`'s config.json, model.safetensors and generation_config.json, with our tokenizer.json,
        metrics.json and how the model was trained (OUTSIDE_META); float16 weights are read back as float32."""
        stored = model if weights_dtype == "float32" else cast_copy(model, WEIGHTS_DTYPES[weights_dtype])
        if not isinstance(stored, HookedCausalLM):
            raise ValueError(f"a {type(model).__name__} is not a Hugging Face model MemLens wraps")
        stored.hf.save_pretrained(folder)
        tokenizer.save(folder / TOKENIZER)
        (folder / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        meta = {key: value for key, value in meta.items() if key != "weights_dtype"}
        if weights_dtype != "float32":
            meta["weights_dtype"] = weights_dtype
        (folder / OUTSIDE_META).write_text(json.dumps(meta, indent=2) + "\n")


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
