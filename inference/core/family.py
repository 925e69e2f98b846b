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
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from inference.core.capabilities import Capability, FamilyConfig

if TYPE_CHECKING:
    from inference.core.ff_memories import FFMemories
    from inference.core.hooks import HookFn
    from inference.core.interventions import Intervention, Interventions
    from inference.core.loaded_model import LoadedModel
    from inference.core.losses import StepObjective
    from inference.core.trace import Trace, TraceRequest


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

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        """Families the training loop trains: the scalar loss of one step on `batch` (a translation batch, or a
        language-model batch for NEXT_TOKEN models; inference.core.losses has the shared pieces)."""
        ...

    def describe(self, config: FamilyConfig) -> str:
        """The model in a line, for its checkpoint card, e.g. "MemTransformer, 10 memory slots; d_model 512, 6+6
        layers"."""
        ...

    def warm_start(self, source: nn.Module, config_fields: dict[str, Any], seed: int) -> nn.Module:
        """A model of this family, with the config `config_fields` name, that starts from the trained `source`'s
        weights (a Transformer's for a working memory, a Memory Transformer's with fewer slots); `seed` draws
        whatever is new. Raises ValueError when the source does not fit."""
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

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        raise ValueError(f"a {self.title} model is not trained by the training loop")

    def describe(self, config: FamilyConfig) -> str:
        return self.title

    def warm_start(self, source: nn.Module, config_fields: dict[str, Any], seed: int) -> nn.Module:
        raise ValueError(f"a {self.title} model cannot start from a model of the {source.config.family} family")


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
