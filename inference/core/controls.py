"""Lesion controls, as a page, the CLI or a study sets them, turned into `Interventions` in one place.

Every page offers some of these controls (Explore: memory size, slot knock-out, blocked reads, head ablations,
a scale; Working memory: size; Segments: knock-out, reset, noise, transplant; FF memories: key edits), and the CLI
offers the Explore ones; the lesion kinds a family registers of its own (the State page's state edits, encoder steps
and clamped gate are the active-memory family's; the Working memory page's mask and forced memory the working
memory's) come as they are (`family_lesions`). A control
left at its default asks for nothing, and a memory size equal to the trained one is no lesion (a slider always
sends a size)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from inference.core.interventions import (
    BlockMemoryReads,
    Intervention,
    Interventions,
    KnockoutSlots,
    MemorySize,
    MemoryStacks,
    NoiseMemory,
    ResetMemory,
    Scale,
    TransplantMemory,
)
from inference.core.lesion_kinds import LesionKind

# A control's choices: those of its intervention, and "none" or "" for asking nothing (forms and the CLI offer these).
BlockReads = Literal["none", "encoder", "decoder", "both"]
assert get_args(BlockReads)[1:] == get_args(MemoryStacks), "the control offers its intervention's choices"


@dataclass(frozen=True)
class LesionControls:
    memory_size: int | None = None  # None: as trained
    trained_memory_size: int | None = None  # the model's own; a memory_size equal to it asks for nothing
    knockout: tuple[int, ...] = ()  # memory slots no query may attend
    block_reads: BlockReads = "none"
    scales: tuple[Scale, ...] = ()  # head ablations, a scaled hook, FF key edits
    reset_at: int | None = None  # segment models: the segment whose incoming memory is reset
    noise_at: int | None = None  # ... gets noise of `noise_scale` times its size, seeded
    noise_scale: float = 0.5
    noise_seed: int = 0
    transplant_at: int | None = None  # ... gets the memory `donor` (token ids) carried there
    donor: tuple[int, ...] = ()
    family_lesions: tuple[LesionKind, ...] = ()  # lesions of kinds a family registers (Family.lesion_kinds)


def lesion_interventions(controls: LesionControls) -> Interventions:
    """What the controls ask for, as one normalised `Interventions`."""
    c = controls
    items: list[Intervention] = []
    if c.memory_size is not None and c.memory_size != c.trained_memory_size:
        items.append(MemorySize(size=c.memory_size))
    if c.knockout:
        items.append(KnockoutSlots(slots=c.knockout))
    if c.block_reads != "none":
        items.append(BlockMemoryReads(stacks=c.block_reads))
    if c.reset_at is not None:
        items.append(ResetMemory(segment=c.reset_at))
    if c.noise_at is not None:
        items.append(NoiseMemory(segment=c.noise_at, scale=c.noise_scale, seed=c.noise_seed))
    if c.transplant_at is not None:
        items.append(TransplantMemory(segment=c.transplant_at, donor=c.donor))
    return Interventions.of(*items, *c.scales, *c.family_lesions)
