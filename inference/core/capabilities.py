"""What a family's models can do (`Capability`, from which the app picks pages, views and controls) and
what every family's config provides (`FamilyConfig`): the floor every other core module stands on."""

from __future__ import annotations

from dataclasses import Field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from torch import nn


class Capability(StrEnum):
    """What a model can do; the app picks pages, views and controls from these."""

    ATTENTION = "attention"  # attention layers whose patterns are hook points (`<stack>.layers.<i>.<attn>.pattern`)
    TRANSLATES = "translates"  # source text in, target text out
    GENERATES_TEXT = "generates_text"  # continues a text
    NEXT_TOKEN = "next_token"  # model(ids [b, n]) -> next-token logits [b, n, vocab]: trains as a language model
    MEMORY_TOKENS = "memory_tokens"  # [mem] vectors on a token axis: memory size, slot knock-out, blocked reads
    SEGMENTS = "segments"  # reads its input segment by segment, carrying a state: captures indexed by segment
    SEGMENT_CACHE = "segment_cache"  # attends to cached states of earlier segments (Transformer-XL)
    RECURRENT_STEPS = "recurrent_steps"  # updates a state tensor step by step: captures indexed by step
    WORKING_MEMORY = "working_memory_decoder"  # a decoder that writes its own memory tokens into its input stream
    FF_KEYS = "ff_keys"  # ReLU feed-forward layers, read as key-value memories
    BEAM_SEARCH = "beam_search"  # decodes its own output by greedy or beam search
    ATTRIBUTION = "attribution"  # integrated gradients onto input tokens and memory slots
    SOURCE_ATTRIBUTION = "source_attribution"  # integrated gradients of its output onto its embedded source tokens


@runtime_checkable
class FamilyConfig(Protocol):
    """What every family's config dataclass provides."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # a dataclass: dataclasses.asdict and replace take it
    family: str
    vocab_size: int
    max_positions: int
    pad_id: int
    bos_id: int
    eos_id: int

    @property
    def memory_size(self) -> int: ...  # trained memory: slots, tokens, state cells; 0 for none

    @property
    def max_memory_size(self) -> int: ...  # largest memory a lesion may ask for


class NoMemory:
    """A config mixin for models without memory: the model listings and the interventions' memory-size check read
    these of every family."""

    @property
    def memory_size(self) -> int:
        return 0

    @property
    def max_memory_size(self) -> int:
        return 0


def config_of(model: nn.Module) -> FamilyConfig:
    """The config a family's model keeps as `model.config` (every family's model sets it; the type checker sees
    an nn.Module's parameters, buffers and submodules only); TypeError for a model without one."""
    config = getattr(model, "config", None)
    if not isinstance(config, FamilyConfig):
        raise TypeError(f"a {type(model).__name__} keeps no family config")
    return config


def check_positions_and_special_ids(config: FamilyConfig) -> None:
    """The checks every config needs: room for BOS and a token, and pad, BOS
    and EOS distinct ids inside the vocabulary; raises ValueError."""
    if config.max_positions < 2:
        raise ValueError("max_positions must be at least 2")
    special = (config.pad_id, config.bos_id, config.eos_id)
    if len(set(special)) != 3 or max(special) >= config.vocab_size:
        raise ValueError("pad, bos and eos ids must be distinct and inside the vocabulary")
