"""The Family interface, the registry of model families, and a loaded model, which carries its family.

A model family is what registers here: a `Family` object with a name, a
title and its config dataclass, which says what its models can do
(`Capability`). It lives in a folder under `inference/families/` with its
model and its run or decode loop (one folder may hold several related
families: hugging_face/ holds three). A model's config names its family
(`family`, the family's name) and, where the family has several, its
variant (`variant`, one of `Family.variants`), the same way for every
family. Everything outside the folder (the trace, the checkpoints, the
app) asks the registry for the family of a config, or a loaded model for
its family, and then asks the family; nothing names a family's classes.

Families are found by importing every subpackage of `inference.families`
(`load_families`); a family defined elsewhere (a plug-in, a test) registers
itself when its module is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from inference.core.axes import AxisRole
from inference.core.capabilities import Capability, FamilyConfig, config_of
from inference.core.family_folders import load_families
from inference.core.interventions import MemorySize, Scale
from inference.core.lesion_kinds import LesionKind, check_lesion_kind, kind_name, kind_order, register_lesion_kind
from inference.core.model_record import ModelRecord
from inference.core.model_results import NO_RESULTS, ModelResults

if TYPE_CHECKING:
    import torch
    from pydantic import BaseModel
    from torch import nn

    from inference.core.ff_memories import FFMemories
    from inference.core.hooks import HookFn
    from inference.core.interventions import Intervention, Interventions
    from inference.core.losses import StepObjective
    from inference.core.tokenizer import TextTokenizer
    from inference.core.trace import Trace, TraceRequest


ConfigT = TypeVar("ConfigT", bound=FamilyConfig)  # a family's config dataclass
ModelT = TypeVar("ModelT", bound="nn.Module")  # the model class it builds


class Family(Protocol[ConfigT, ModelT]):
    """A model family: how to build, describe and run its models.

    Generic over the family's own config and model classes: a family's methods take its config and its model
    only. The registry holds families of every kind, so what it hands out is an `AnyFamily`: the config a family
    is given is the one whose `family` value found it, which the type checker cannot follow.
    """

    # Read-only: a family sets these as class attributes, of the type here or a narrower one (a tuple of one name).

    @property
    def name(self) -> str:
        """The name it registers under, which its configs' `family` holds, e.g. "memory_transformer"."""
        ...

    @property
    def variants(self) -> tuple[str, ...]:
        """The values its configs' `variant` field may take, where it has several kinds of model (a Memory
        Transformer's "memctrl"); () for a family of one kind, whose config has no variant."""
        ...

    @property
    def title(self) -> str:
        """In words, e.g. "Memory Transformer (paper 000)"."""
        ...

    @property
    def config_type(self) -> type[ConfigT]:
        """The config dataclass; its __post_init__ refuses bad values with ValueError."""
        ...

    @property
    def traces_mixed_lengths(self) -> bool:
        """One trace may hold sources of different lengths (padded); else one length a trace."""
        ...

    @property
    def token_axes(self) -> Mapping[str, AxisRole]:
        """Every token axis its traces have, by name, with its role (what its positions are): the analyses find
        axes by role, and a trace with an axis left out here is refused as the family's bug."""
        ...

    @property
    def record_fields(self) -> type[BaseModel] | None:
        """The fields its checkpoints record of their run beyond the shared ones (inference.core.model_record), as
        a pydantic model; None: none."""
        ...

    @property
    def lesion_kinds(self) -> tuple[type[LesionKind], ...]:
        """The lesion kinds of its own (beyond the core's, inference.core.interventions), registered with it:
        `intervention_hooks` applies them."""
        ...

    def applicable_lesions(self, config: ConfigT) -> tuple[type[LesionKind], ...]:
        """Every lesion kind a model of `config` takes, the core's shared kinds (inference.core.interventions)
        included, in the order the kinds apply: the pages offer these, in forms built from their fields, and a run
        refuses any other kind with an InterventionError."""
        ...

    def build(self, config: ConfigT) -> ModelT:
        """A model with fresh weights whose hook points are named."""
        ...

    def capabilities(self, config: ConfigT) -> frozenset[Capability]: ...

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Run the model on the request's inputs, recording the requested hook points."""
        ...

    def translate(
        self,
        model: ModelT,
        src_ids: torch.Tensor,  # [b, n]
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        """Families that translate: the output ids of every source (EOS left out)."""
        ...

    def prompt_ids(self, config: ConfigT, tokenizer: TextTokenizer, text: str) -> list[int]:
        """Families that generate text: the ids a text is read as when it starts a prompt (the language model
        trained here: [EOS] + its tokens, as every article in its training stream; a Hugging Face LM: [BOS] +
        its tokens). Its trace and trigger mining frame texts this way."""
        ...

    def ff_memories(self, model: ModelT) -> FFMemories:
        """Families with FF keys: which FF layers are read as memories, and how (inference.analyses.ff_values)."""
        ...

    def intervention_hooks(
        self, model: ModelT, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        """The hooks of a family-specific intervention, or None when the family
        leaves it to the shared mechanism; raises InterventionError if it does not fit."""
        ...

    def source_embedding(self, model: ModelT) -> nn.Module:
        """Families with SOURCE_ATTRIBUTION: the module that embeds the source tokens (ids [b, n] -> [b, n, e])
        and nothing else; the model's forward(src_ids, tgt_in) gives teacher-forced logits [b, t, vocab]."""
        ...

    def training_loss(self, model: ModelT, batch: Any, objective: StepObjective) -> torch.Tensor:
        """Families the training loop trains: the scalar loss of one step on `batch` (a translation batch, or a
        language-model batch for NEXT_TOKEN models; inference.core.losses has the shared pieces)."""
        ...

    def describe(self, config: ConfigT) -> str:
        """The model in a line, for its checkpoint card, e.g. "MemTransformer, 10 memory slots; d_model 512, 6+6
        layers"."""
        ...

    def warm_start(self, source: nn.Module, config_fields: dict[str, Any], seed: int) -> ModelT:
        """A model of this family, with the config `config_fields` name, that starts from the trained `source`'s
        weights (a Transformer's for a working memory, a Memory Transformer's with fewer slots); `seed` draws
        whatever is new. Raises ValueError when the source does not fit."""
        ...

    # What training reads of a family (training/loop/config.py names none):

    @property
    def training_options(self) -> type | None:
        """The type of its own section of a training config, keyed by the family's name (a pydantic dataclass,
        every key checked), handed to its training loss as StepObjective.options; None: no section."""
        ...

    @property
    def warm_start_fields(self) -> tuple[str, ...]:
        """The model fields a run that starts from another trained model (init_from) may set, the sizes coming
        from that model; (): it starts from its own kind only, with no model section."""
        ...

    @property
    def needs_trained_start(self) -> bool:
        """Its models are built on a trained model (init_from), never from scratch (memory added to an LM)."""
        ...

    def first_candidate_epoch(self, options: Any) -> int:
        """Epochs before it are not candidates for the checkpoint (a working memory's plain epochs)."""
        ...

    def training_note(self, options: Any) -> str:
        """What its section changed about the schedule, for the checkpoint card (e.g. " (2 of them without
        memory)"); "" where nothing."""
        ...


class FamilyDefaults(Generic[ConfigT, ModelT]):
    """What a family leaves out, refused with its name: inherit it and write
    only the members the family's capabilities call for."""

    title: str
    variants: tuple[str, ...] = ()
    traces_mixed_lengths = True
    lesion_kinds: tuple[type[LesionKind], ...] = ()
    record_fields: type[BaseModel] | None = None

    def translate(
        self,
        model: ModelT,
        src_ids: torch.Tensor,
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        raise ValueError(f"a {self.title} model does not translate")

    def prompt_ids(self, config: ConfigT, tokenizer: TextTokenizer, text: str) -> list[int]:
        raise ValueError(f"a {self.title} model does not read prompts")

    def ff_memories(self, model: ModelT) -> FFMemories:
        raise ValueError(f"the FF layers of a {self.title} model are not read as memories")

    def applicable_lesions(self, config: ConfigT) -> tuple[type[LesionKind], ...]:
        return lesions_in_order((MemorySize,) if config.max_memory_size else (), (Scale,), self.lesion_kinds)

    def intervention_hooks(
        self, model: ModelT, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        return None  # the memory size and the shared scale are all

    def source_embedding(self, model: ModelT) -> nn.Module:
        raise ValueError(f"a {self.title} model names no source embedding to attribute onto")

    def training_loss(self, model: ModelT, batch: Any, objective: StepObjective) -> torch.Tensor:
        raise ValueError(f"a {self.title} model is not trained by the training loop")

    def describe(self, config: ConfigT) -> str:
        return self.title

    def warm_start(self, source: nn.Module, config_fields: dict[str, Any], seed: int) -> ModelT:
        raise ValueError(f"a {self.title} model cannot start from a model of the {config_of(source).family} family")

    training_options: type | None = None
    warm_start_fields: tuple[str, ...] = ()
    needs_trained_start = False

    def first_candidate_epoch(self, options: Any) -> int:
        return 0

    def training_note(self, options: Any) -> str:
        return ""


def lesions_in_order(*groups: Sequence[type[LesionKind]]) -> tuple[type[LesionKind], ...]:
    """The kinds of every group, each once, in the order their hooks apply (the order registered)."""
    kinds = dict.fromkeys(kind for group in groups for kind in group)
    return tuple(sorted(kinds, key=lambda kind: kind_order(kind_name(kind))))


AnyFamily = Family[Any, Any]  # a family of any config and model class, as the registry holds them
FamilyT = TypeVar("FamilyT", bound=AnyFamily)

_FAMILIES: dict[str, AnyFamily] = {}  # name (a config's `family`) -> family


def register(family: FamilyT) -> FamilyT:
    """Register a family under its name, and its own lesion kinds; a name taken by another family, variants its
    config type cannot hold, token axes without a role each, or a lesion kind the core refuses
    (inference.core.lesion_kinds) raises ValueError and registers none of them."""
    taken = _FAMILIES.get(family.name)
    if taken is not None and taken is not family:
        raise ValueError(f"family name {family.name!r} is registered by another family already")
    _check_variants(family)
    _check_token_axes(family)
    for kind in family.lesion_kinds:
        check_lesion_kind(kind)
    _FAMILIES[family.name] = family
    for kind in family.lesion_kinds:
        register_lesion_kind(kind)
    return family


def _check_variants(family: AnyFamily) -> None:
    has_field = "variant" in getattr(family.config_type, "__dataclass_fields__", {})
    if bool(family.variants) != has_field:
        raise ValueError(
            f"family {family.name}: its config has a `variant` field exactly when it declares variants "
            f"(variants {list(family.variants)}, field {'present' if has_field else 'absent'})"
        )
    clashing = set(family.variants) & (set(_FAMILIES) - {family.name})
    if clashing:
        raise ValueError(f"family {family.name}: variant {sorted(clashing)[0]!r} is another family's name")


def _check_token_axes(family: AnyFamily) -> None:
    axes = getattr(family, "token_axes", None)
    if not isinstance(axes, Mapping) or not axes:
        raise ValueError(f"family {family.name} declares no token_axes (each token axis's name and AxisRole)")
    for name, role in axes.items():
        if not (isinstance(name, str) and name.isidentifier() and isinstance(role, AxisRole)):
            raise ValueError(f"family {family.name}: token axis {name!r} needs a name and an AxisRole, not {role!r}")


def family_of(name: str) -> AnyFamily:
    """The family registered as `name` (a config's `family`); ValueError naming the known ones otherwise."""
    load_families()
    family = _FAMILIES.get(name)
    if family is None:
        raise _unknown_family(name)
    return family


def family_of_config(config: FamilyConfig) -> AnyFamily:
    """The family that builds `config`."""
    return family_of(config.family)


def family_of_model(model: nn.Module) -> AnyFamily:
    """The family of a built model, found by its config."""
    return family_of_config(config_of(model))


def _variant_owner(name: object) -> AnyFamily | None:
    """The registered family that declares `name` as one of its variants, if one does."""
    return next((family for family in _FAMILIES.values() if name in family.variants), None)


def _unknown_family(name: object) -> ValueError:
    owner = _variant_owner(name)
    hint = f" ({name!r} is a variant: family {owner.name!r}, variant {name!r})" if owner is not None else ""
    return ValueError(f"unknown family {name!r}{hint}; known: {', '.join(sorted(_FAMILIES))}")


def family_names() -> Sequence[str]:
    load_families()
    return sorted(_FAMILIES)


def families() -> list[AnyFamily]:
    """Every registered family."""
    load_families()
    return list(_FAMILIES.values())


def current_config_values(values: dict[str, Any], format_version: int) -> dict[str, Any]:
    """A model config's JSON form as the current format writes it. Format 1 named a family's variant in
    `family` (a Memory Transformer's "memctrl"); format 2 names the family there and the variant in `variant`."""
    if format_version >= 2:
        return values
    load_families()
    named = values.get("family")
    owner = _variant_owner(named)
    return values if owner is None else {**values, "family": owner.name, "variant": named}


def config_from_dict(values: dict[str, Any]) -> FamilyConfig:
    """A config from its JSON form (the current format), built by the family its `family` field names;
    unknown or missing fields raise TypeError, bad values ValueError."""
    name = values.get("family")
    if not isinstance(name, str):  # missing, or not a name
        load_families()
        raise _unknown_family(name)
    return family_of(name).config_type(**values)


def kind_of(config: FamilyConfig) -> str:
    """What a model is, in a word: its family, and its variant where the family has several
    ("memory_transformer/memctrl")."""
    variant = getattr(config, "variant", None) if family_of_config(config).variants else None
    return config.family if variant is None else f"{config.family}/{variant}"


def build_model(config: FamilyConfig) -> nn.Module:
    return family_of_config(config).build(config)


def capabilities_of(config: FamilyConfig) -> frozenset[Capability]:
    return family_of_config(config).capabilities(config)


@dataclass
class LoadedModel:
    """A model ready to run: weights on a device, its tokenizer and records."""

    name: str
    model: torch.nn.Module
    tokenizer: TextTokenizer
    record: ModelRecord = field(default_factory=ModelRecord)  # how it was made (config.json's meta)
    metrics: ModelResults = NO_RESULTS  # what its run measured (metrics.json)

    @property
    def config(self) -> FamilyConfig:
        return config_of(self.model)

    @property
    def family(self) -> AnyFamily:
        """The registered family that builds this model's config."""
        return family_of_config(self.config)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device
