"""The knock-out lesion of MemLens's RMT: a memory slot no query reads, in
every segment (the reset, noise and transplant lesions of the memory
entering a segment are every segment model's: inference.core.segment_memory)."""

from __future__ import annotations

import torch

from inference.core.hook_names import MASK, kind_of
from inference.core.hooks import HookFn, HookPoint, hook_points
from inference.core.interventions import KnockoutSlots
from inference.core.segment_memory import knocked_out_slots
from inference.families.recurrent_memory.model import RecurrentMemoryTransformer


def knockout_hooks(
    model: RecurrentMemoryTransformer, item: KnockoutSlots, memory_size: int
) -> list[tuple[str, HookFn]]:
    """No query reads knocked-out memory slots: their read-block keys are masked in every layer."""
    slots = knocked_out_slots(item, memory_size)

    def hook(mask: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 1, q, cached+k]
        cached = mask.shape[-1] - mask.shape[-2]  # keys are [cache ; read ; tokens ; write]
        mask = mask.clone()
        mask[..., [cached + slot for slot in slots]] = False
        return mask

    return [(name, hook) for name in hook_points(model) if kind_of(name) == MASK]
