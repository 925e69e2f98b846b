"""Memory lesions of a segment-recurrent model with memory tokens: a slot
knocked out in every segment, and the memory entering one segment reset,
made noisy or taken from another input."""

from __future__ import annotations

from collections.abc import Callable

import torch

from inference.core.hook_names import MASK, kind_of
from inference.core.hooks import HookFn, HookPoint, current_scope, hook_points
from inference.core.interventions import (
    InterventionError,
    KnockoutSlots,
    NoiseMemory,
    ResetMemory,
    TransplantMemory,
)
from inference.families.recurrent_memory.model import RecurrentMemoryTransformer


def knockout_hooks(
    model: RecurrentMemoryTransformer, item: KnockoutSlots, memory_size: int
) -> list[tuple[str, HookFn]]:
    """No query reads knocked-out memory slots: their read-block keys are masked in every layer."""
    bad = [slot for slot in item.slots if slot >= memory_size]
    if bad:
        raise InterventionError(
            f"memory slots {bad} are out of range: the run has {memory_size} (0 to {memory_size - 1})"
        )

    def hook(mask: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 1, q, cached+k]
        cached = mask.shape[-1] - mask.shape[-2]  # keys are [cache ; read ; tokens ; write]
        mask = mask.clone()
        mask[..., [cached + slot for slot in item.slots]] = False
        return mask

    return [(name, hook) for name in hook_points(model) if kind_of(name) == MASK]


def memory_lesion_hook(
    model: RecurrentMemoryTransformer, item: ResetMemory | NoiseMemory | TransplantMemory, memory_size: int
) -> HookFn:
    """A hook on `memory.read` that changes the memory entering segment `item.segment` only."""
    change = _memory_change(model, item, memory_size)

    def hook(memory: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, m, d]
        if current_scope().get("segment") != item.segment:
            return memory
        return change(memory)

    return hook


def _memory_change(
    model: RecurrentMemoryTransformer, item: ResetMemory | NoiseMemory | TransplantMemory, memory_size: int
) -> Callable[[torch.Tensor], torch.Tensor]:
    """What the lesion makes of the memory [b, m, d] entering its segment."""
    if isinstance(item, ResetMemory):
        return lambda memory: model.initial_memory(memory.shape[0], memory_size)
    if isinstance(item, TransplantMemory):
        replacement = donor_memory(model, item, memory_size)  # [1, m, d]
        return lambda memory: replacement.expand(memory.shape[0], -1, -1)
    noise = item

    def noisy(memory: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator(device=memory.device).manual_seed(noise.seed)
        drawn = torch.randn(memory.shape, generator=generator, device=memory.device, dtype=memory.dtype)
        return memory + noise.scale * memory.pow(2).mean().sqrt() * drawn

    return noisy


def donor_memory(model: RecurrentMemoryTransformer, item: TransplantMemory, memory_size: int) -> torch.Tensor:
    """[1, m, d]: the memory the donor input carries into segment `item.segment`."""
    length = model.config.segment_length
    needed = item.segment * length
    if len(item.donor) < needed:
        raise InterventionError(
            f"the donor input has {len(item.donor)} tokens; it reaches segment {item.segment} "
            f"only with at least {needed} ({length} per segment)"
        )
    if item.segment == 0:
        return model.initial_memory(1, memory_size)
    if max(item.donor) >= model.config.vocab_size:
        raise InterventionError(f"donor token ids must be below the vocabulary size {model.config.vocab_size}")
    ids = torch.tensor([item.donor[:needed]], device=model.memory_init.device)  # [1, needed]
    with torch.no_grad():
        _, memory = model.read(ids, memory_size)
    return memory
