"""The toy family's own lesion kind: the carried state's slots rotated, from one segment on."""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import Field

from inference.core.hooks import HookFn, HookPoint, current_scope
from inference.core.lesion_kinds import LesionKind


class RotateState(LesionKind):
    """Toy models: the state entering segment `from_segment` and every later one has its slots rotated by
    `shift` (slot i is read where slot i + shift was)."""

    kind: Literal["toy_rotate_state"] = "toy_rotate_state"
    shift: int = Field(1, ge=1, le=7, description="slots to rotate by")
    from_segment: int = Field(0, ge=0, le=31)
    title: ClassVar[str] = "Rotate the carried state"

    def words(self, trained_memory: int) -> str:
        slots = f"{self.shift} slot{'s' if self.shift != 1 else ''}"
        return f"carried state rotated by {slots} from segment {self.from_segment}"

    def hook(self) -> HookFn:
        def rotate(state: torch.Tensor, point: HookPoint) -> torch.Tensor | None:  # state [b, slot, d]
            if current_scope().get("segment", 0) < self.from_segment:
                return None
            return torch.roll(state, shifts=-self.shift, dims=1)

        return rotate
