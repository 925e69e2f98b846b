"""Lesions as data.

An intervention is one tagged value: a `kind`, the hook point it targets
where it has one, and its parameters. `Interventions` holds any number of
them, normalised once where they enter (duplicates dropped, one memory
size, a canonical order), so equal requests are equal values and the app's
caches and the JSON API take them as they are.

One mechanism applies them all (inference.core.applied_interventions): every
intervention becomes hooks on named hook points for the length of one
call, or, for the memory size, the memory the run is given. `scale` is
applied here for every family, by the axis names its hook point declares;
the memory lesions belong to the families that have such memory, and each
family builds their hooks (`Family.intervention_hooks`). Model code is
never forked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, ClassVar, Literal

from pydantic import ConfigDict, Field, RootModel, field_validator, model_validator

from inference.core.bounds import MAX_FACTOR, MAX_INDEX, MAX_LISTED, MAX_MEMORY_SIZE, MAX_SEED
from inference.core.hook_names import HOOK_NAME, ff_keys, head_outputs
from inference.core.lesion_kinds import Lesion, LesionKind, kind_order, listed, register_lesion_kind


class InterventionError(ValueError):
    """An intervention that does not fit the model (out-of-range value, unknown hook)."""


MemoryStacks = Literal["encoder", "decoder", "both"]  # where memory reads can be blocked
READS = {"encoder": "the encoder", "decoder": "the decoder's cross-attention", "both": "encoder and decoder"}


def _unique(items: tuple) -> tuple:
    """Duplicates dropped, first occurrence kept: asking twice is asking once."""
    return tuple(dict.fromkeys(items))


def _sorted_set(items: tuple) -> tuple:
    """Duplicates dropped and sorted, for lists whose order means nothing (slots, indices)."""
    return tuple(sorted(set(items)))


class MemorySize(LesionKind):
    """Run with this much memory: [mem] slots, working-memory tokens, state cells."""

    kind: Literal["memory_size"] = "memory_size"
    size: int = Field(
        ge=0,
        le=MAX_MEMORY_SIZE,
        description="up to the model's max_memory_size; 0 = no memory",
        json_schema_extra={"control": "slider", "upto": "max_memory_size", "start": "memory_size"},
    )
    title: ClassVar[str] = "Memory size"

    def words(self, trained_memory: int) -> str:
        return "no memory (size 0)" if self.size == 0 else f"memory size {self.size} (trained with {trained_memory})"


class KnockoutSlots(LesionKind):
    """No query may attend these memory slots."""

    kind: Literal["knockout_slots"] = "knockout_slots"
    slots: tuple[Annotated[int, Field(ge=0, le=MAX_MEMORY_SIZE)], ...] = Field(
        min_length=1, max_length=MAX_LISTED, json_schema_extra={"control": "slots", "upto": "max_memory_size"}
    )
    title: ClassVar[str] = "Knock out memory slots"

    _sorted_slots = field_validator("slots")(_sorted_set)

    def words(self, trained_memory: int) -> str:
        return f"memory slot{'s' if len(self.slots) > 1 else ''} {listed(self.slots)} knocked out"


class BlockMemoryReads(LesionKind):
    """Sequence queries may not attend memory keys."""

    kind: Literal["block_memory_reads"] = "block_memory_reads"
    stacks: MemoryStacks = Field(description="encoder self-attention, decoder cross-attention, or both")
    title: ClassVar[str] = "Block reads from memory"

    def words(self, trained_memory: int) -> str:
        return f"reads from memory blocked in {READS[self.stacks]}"


def _check_segment(segment: int, extent: Mapping[str, int], lesion: str) -> None:
    """A segment lesion within the input's segments (`extent["segments"]`, as a page counted them)."""
    segments = extent.get("segments")
    if segments is not None and segment >= segments:
        raise InterventionError(f"{lesion} at segment {segment}: this input has {segments} segments")


class ResetMemory(LesionKind):
    """Segment models: the memory entering segment `segment` is the initial memory, as at the start of a run."""

    kind: Literal["reset_memory"] = "reset_memory"
    segment: int = Field(ge=0, le=MAX_INDEX)
    title: ClassVar[str] = "Reset the memory at a segment"

    def words(self, trained_memory: int) -> str:
        return f"memory reset at segment {self.segment}"

    def check_within(self, extent: Mapping[str, int]) -> None:
        _check_segment(self.segment, extent, "reset")


class NoiseMemory(LesionKind):
    """Segment models: Gaussian noise added to the memory entering segment `segment`, its standard
    deviation `scale` times the memory's root mean square there (1 = noise as large as the memory); seeded."""

    kind: Literal["noise_memory"] = "noise_memory"
    segment: int = Field(ge=0, le=MAX_INDEX)
    scale: float = Field(0.5, gt=0, le=MAX_FACTOR, allow_inf_nan=False)
    seed: int = Field(0, ge=0, le=MAX_SEED)
    title: ClassVar[str] = "Add noise to the memory at a segment"

    def words(self, trained_memory: int) -> str:
        return f"noise of scale {self.scale:g} added to the memory at segment {self.segment} (seed {self.seed})"

    def check_within(self, extent: Mapping[str, int]) -> None:
        _check_segment(self.segment, extent, "noise")


class TransplantMemory(LesionKind):
    """Segment models: the memory entering segment `segment` is the one another input (`donor`, token ids)
    carried into that segment."""

    kind: Literal["transplant_memory"] = "transplant_memory"
    segment: int = Field(ge=0, le=MAX_INDEX)
    donor: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        min_length=1, max_length=MAX_INDEX, description="the other input", json_schema_extra={"control": "input"}
    )
    title: ClassVar[str] = "Transplant another input's memory"

    def words(self, trained_memory: int) -> str:
        return f"another input's memory transplanted into segment {self.segment}"

    def check_within(self, extent: Mapping[str, int]) -> None:
        _check_segment(self.segment, extent, "transplant")


class Scale(LesionKind):
    """Multiply a hook's tensor, or chosen entries along one of its axes, by a factor (0 = ablate)."""

    kind: Literal["scale"] = "scale"
    hook: str = Field(
        pattern=HOOK_NAME,
        description="hook point name (`memlens hooks MODEL` lists them)",
        examples=["decoder.layers.1.cross_attn.z", "layers.3.ff.keys"],
        json_schema_extra={"control": "hook"},
    )
    axis: str | None = Field(
        None, pattern=r"^[a-z_]{1,30}$", description="axis to index, e.g. head, ff_key; None = all"
    )
    index: tuple[Annotated[int, Field(ge=0, le=MAX_INDEX)], ...] = Field(
        (), max_length=MAX_INDEX, description="entries along axis"
    )
    factor: float = Field(0.0, ge=-MAX_FACTOR, le=MAX_FACTOR, allow_inf_nan=False, description="0 zeroes, 2 doubles")
    title: ClassVar[str] = "Scale a hook point"
    advanced: ClassVar[bool] = True

    _sorted_index = field_validator("index")(_sorted_set)

    @model_validator(mode="after")
    def _index_with_axis(self) -> Scale:
        if (self.axis is None) != (not self.index):
            raise ValueError("give an axis together with the indices along it, or neither (the whole tensor)")
        return self

    def words(self, trained_memory: int) -> str:
        where = f" {self.axis} {listed(self.index)}" if self.axis and self.index else ""
        return f"{self.hook}{where} {'zeroed' if self.factor == 0 else f'scaled by {self.factor:g}'}"


# The kinds every family may meet, registered in the order their hooks apply (a noisy transplant is the
# transplant plus noise); a family's own kinds come after these.
for _kind in (
    MemorySize,
    KnockoutSlots,
    BlockMemoryReads,
    ResetMemory,
    TransplantMemory,
    NoiseMemory,
    Scale,
):
    register_lesion_kind(_kind)

Intervention = Lesion  # one lesion of any registered kind


def ablate_head(attention: str, head: int) -> Scale:
    """Zero one head's output of an attention module (e.g. "decoder.layers.1.cross_attn")."""
    return Scale(hook=head_outputs(attention), axis="head", index=(head,), factor=0.0)


def scale_ff_keys(ff: str, keys: tuple[int, ...], factor: float) -> Scale:
    """Scale key coefficients of a feed-forward module (e.g. "layers.3.ff"): 0 zeroes them."""
    return Scale(hook=ff_keys(ff), axis="ff_key", index=tuple(keys), factor=factor)


class Interventions(RootModel[tuple[Intervention, ...]]):
    """What to change in one run, normalised: no duplicates, slots and indices
    sorted, scales of one hook axis by one factor merged, at most one memory
    size, kinds in a fixed order (requests that ask the same are equal values)."""

    model_config = ConfigDict(frozen=True)
    root: tuple[Intervention, ...] = Field((), max_length=MAX_LISTED)

    @field_validator("root")
    @classmethod
    def _normalised(cls, items: tuple) -> tuple:
        items = _unique(_merged_scales(items))
        sizes = {item.size for item in items if isinstance(item, MemorySize)}
        if len(sizes) > 1:
            raise ValueError(f"two memory sizes asked for at once: {sorted(sizes)}")
        return tuple(sorted(items, key=lambda item: (kind_order(item.kind), item.model_dump_json())))

    @classmethod
    def of(cls, *items: Intervention) -> Interventions:
        return cls(tuple(items))

    def __iter__(self) -> Iterator[Intervention]:  # type: ignore[override]
        return iter(self.root)

    def __len__(self) -> int:
        return len(self.root)

    def of_kind(self, kind: type[LesionKind]) -> list:
        return [item for item in self.root if isinstance(item, kind)]

    @property
    def memory_size(self) -> int | None:
        """The memory size asked for; None = as trained."""
        sizes = self.of_kind(MemorySize)
        return sizes[0].size if sizes else None

    def is_noop(self) -> bool:
        return not self.root

    def check_within(self, extent: Mapping[str, int]) -> None:
        """Refuse (InterventionError) a lesion beyond the run a page measured, as each kind bounds itself
        (`LesionKind.check_within`; `extent`: e.g. {"segments": 3})."""
        for item in self.root:
            item.check_within(extent)


def _merged_scales(items: tuple) -> tuple:
    """Scales of the same hook, axis and factor as one scale over all their indices."""
    merged: dict[tuple, set[int]] = {}
    for item in items:
        if isinstance(item, Scale) and item.axis is not None:
            merged.setdefault((item.hook, item.axis, item.factor), set()).update(item.index)
    scales = [Scale(hook=h, axis=a, index=tuple(i), factor=f) for (h, a, f), i in merged.items()]
    return tuple(item for item in items if not (isinstance(item, Scale) and item.axis is not None)) + tuple(scales)


NO_INTERVENTIONS = Interventions()
