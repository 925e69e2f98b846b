"""The Family interface and the registry of model families.

A model family is one folder, `inference/families/<name>/`, holding its
model, its config dataclass, its run or decode loop, and a `Family` object
that says what its models can do (`Capability`) and registers itself
under every `family` value its configs carry. Everything outside the
folder (the trace, the checkpoints, the app) asks the registry for the
family of a config and then asks the family; nothing names a family's
classes.

Families are found by importing every subpackage of `inference.families`
(`load_families`); a family defined elsewhere (a plug-in, a test) registers
itself when its module is imported.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch
from torch import nn

if TYPE_CHECKING:
    from inference.analyses.ff_values import FFMemories
    from inference.core.checkpoint import LoadedModel
    from inference.core.hooks import HookFn
    from inference.core.interventions import Intervention, Interventions
    from inference.core.trace import Trace, TraceRequest


class Capability(StrEnum):
    """What a model can do; the app picks pages, views and controls from these."""

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


def check_positions_and_special_ids(config: FamilyConfig) -> None:
    """The checks every config needs: room for BOS and a token, and pad, BOS
    and EOS distinct ids inside the vocabulary; raises ValueError."""
    if config.max_positions < 2:
        raise ValueError("max_positions must be at least 2")
    special = (config.pad_id, config.bos_id, config.eos_id)
    if len(set(special)) != 3 or max(special) >= config.vocab_size:
        raise ValueError("pad, bos and eos ids must be distinct and inside the vocabulary")


class Family(Protocol):
    """A model family: how to build, describe and run its models."""

    name: str  # the folder name, e.g. "memory_transformer"
    config_names: tuple[str, ...]  # the `family` values of the configs it builds
    title: str  # in words, e.g. "Memory Transformer (paper 000)"

    config_type: type  # the config dataclass; its __post_init__ refuses bad values with ValueError
    traces_mixed_lengths: bool  # one trace may hold sources of different lengths (padded); else one length a trace

    def build(self, config: FamilyConfig) -> nn.Module:
        """A model with fresh weights whose hook points are named."""
        ...

    def capabilities(self, config: FamilyConfig) -> frozenset[Capability]: ...

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Run the model on the request's inputs, recording the requested hook points."""
        ...

    def translate(
        self,
        model: nn.Module,
        src_ids: torch.Tensor,  # [b, n]
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        """Families that translate: the output ids of every source (EOS left out)."""
        ...

    def ff_memories(self, model: nn.Module) -> FFMemories:
        """Families with FF keys: which FF layers are read as memories, and how (inference.analyses.ff_values)."""
        ...

    def intervention_hooks(
        self, model: nn.Module, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        """The hooks of a family-specific intervention, or None when the family
        leaves it to the shared mechanism; raises InterventionError if it does not fit."""
        ...

    def source_embedding(self, model: nn.Module) -> nn.Module:
        """Families with SOURCE_ATTRIBUTION: the module that embeds the source tokens (ids [b, n] -> [b, n, e])
        and nothing else; the model's forward(src_ids, tgt_in) gives teacher-forced logits [b, t, vocab]."""
        ...


class FamilyDefaults:
    """What a family leaves out, refused with its name: inherit it and write
    only the members the family's capabilities call for."""

    title: str
    traces_mixed_lengths = True

    def translate(
        self,
        model: nn.Module,
        src_ids: torch.Tensor,
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        raise ValueError(f"a {self.title} model does not translate")

    def ff_memories(self, model: nn.Module) -> FFMemories:
        raise ValueError(f"the FF layers of a {self.title} model are not read as memories")

    def intervention_hooks(
        self, model: nn.Module, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        return None  # the memory size and the shared scale are all

    def source_embedding(self, model: nn.Module) -> nn.Module:
        raise ValueError(f"a {self.title} model names no source embedding to attribute onto")


_FAMILIES: dict[str, Family] = {}  # config `family` value -> family


def register(family: Family) -> Family:
    """Register a family under each of its config names; a name taken by another family raises ValueError
    and registers none of them."""
    for config_name in family.config_names:
        taken = _FAMILIES.get(config_name)
        if taken is not None and taken.name != family.name:
            raise ValueError(f"config family {config_name!r} is registered by {taken.name} already")
    for config_name in family.config_names:
        _FAMILIES[config_name] = family
    return family


def load_families() -> None:
    """Import every family folder under inference/families, so each registers itself."""
    package = importlib.import_module("inference.families")
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            importlib.import_module(f"inference.families.{module.name}")


def family_of(config_name: str) -> Family:
    """The family that builds configs of `config_name`; ValueError naming the known ones otherwise."""
    load_families()
    family = _FAMILIES.get(config_name)
    if family is None:
        raise ValueError(f"unknown family {config_name!r}; known: {', '.join(sorted(_FAMILIES))}")
    return family


def config_names() -> Sequence[str]:
    load_families()
    return sorted(_FAMILIES)


def families() -> list[Family]:
    """Every registered family, once each."""
    load_families()
    return list({family.name: family for family in _FAMILIES.values()}.values())


def config_from_dict(values: dict[str, Any]) -> FamilyConfig:
    """A config from its JSON form, built by the family its `family` field names;
    unknown or missing fields raise TypeError, bad values ValueError."""
    return family_of(values.get("family")).config_type(**values)


def build_model(config: FamilyConfig) -> nn.Module:
    return family_of(config.family).build(config)


def capabilities_of(config: FamilyConfig) -> frozenset[Capability]:
    return family_of(config.family).capabilities(config)
