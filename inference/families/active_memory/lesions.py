"""Lesions of the state tensor, the active-memory family's own lesion kinds, and their hooks on the state after
each step's last layer (and on s0, for an edit from step 0): a region zeroed or frozen from a step on, the encoder
stopped after fewer steps, a gate clamped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

import torch
from pydantic import Field, model_validator

from inference.core import hook_names
from inference.core.bounds import MAX_INDEX
from inference.core.hooks import HookFn, HookPoint, current_scope
from inference.core.interventions import InterventionError
from inference.core.lesion_kinds import LesionKind, plural
from inference.families.active_memory.model import ActiveMemoryModel

BEFORE_FIRST_STEP = -1  # the step index of s0, which no step has touched yet
StateEdit = Literal["zero", "freeze"]
Gate = Literal["update", "reset"]  # a CGRU layer's gates


def _check_step(step: int, extent: Mapping[str, int]) -> None:
    last = extent.get("last_step")
    if last is not None and step > last:
        raise InterventionError(f"step {step} is beyond this run: its steps are 0 to {last}")


class EditState(LesionKind):
    """Models with recurrent steps: from step `from_step` on, the state at positions `start` to `stop`
    (exclusive; None: to the end) of its length is zeroed, or frozen at its value before that step."""

    kind: Literal["edit_state"] = "edit_state"
    mode: StateEdit
    from_step: int = Field(0, ge=0, le=MAX_INDEX)
    start: int = Field(0, ge=0, le=MAX_INDEX)
    stop: int | None = Field(None, ge=1, le=MAX_INDEX)
    title: ClassVar[str] = "Zero or freeze a region of the state"

    @model_validator(mode="after")
    def _region_not_empty(self) -> EditState:
        if self.stop is not None and self.stop <= self.start:
            raise ValueError(f"the region {self.start} to {self.stop} is empty: stop must be above start")
        return self

    def words(self, trained_memory: int) -> str:
        region = (
            f"positions {self.start} to the end" if self.stop is None else f"positions {self.start} to {self.stop - 1}"
        )
        verb = "zeroed" if self.mode == "zero" else "frozen"
        return f"state {region} {verb} from step {self.from_step}"

    def check_within(self, extent: Mapping[str, int]) -> None:
        _check_step(self.from_step, extent)
        length = extent.get("length")
        if length is not None and (self.start >= length or (self.stop is not None and self.stop > length)):
            raise InterventionError(f"the region must lie within the state's {length} positions (0 to {length - 1})")


class EncoderSteps(LesionKind):
    """Models with recurrent steps: the encoder runs only its first `steps` steps; the state then stays as it is."""

    kind: Literal["encoder_steps"] = "encoder_steps"
    steps: int = Field(ge=0, le=MAX_INDEX)
    title: ClassVar[str] = "Stop the encoder early"

    def words(self, trained_memory: int) -> str:
        return plural(self.steps, "encoder step")

    def check_within(self, extent: Mapping[str, int]) -> None:
        ran = extent.get("encoder_steps")
        if ran is not None and self.steps > ran:
            raise InterventionError(f"{self.steps} encoder steps: this input runs {ran}")


class ClampGate(LesionKind):
    """Models with recurrent steps: a gate of every CGRU layer held at `value` from step `from_step` on
    (update 1: the state never changes; update 0: it is replaced by the candidate)."""

    kind: Literal["clamp_gate"] = "clamp_gate"
    gate: Gate
    value: float = Field(1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    from_step: int = Field(0, ge=0, le=MAX_INDEX)
    title: ClassVar[str] = "Clamp a gate"

    def words(self, trained_memory: int) -> str:
        return f"{self.gate} gate clamped to {self.value:g} from step {self.from_step}"

    def check_within(self, extent: Mapping[str, int]) -> None:
        _check_step(self.from_step, extent)


# The order their hooks apply in: the encoder stopped, then a region edited, then a gate clamped.
STATE_LESIONS = (EncoderSteps, EditState, ClampGate)


def state_edit_hooks(model: ActiveMemoryModel, edit: EditState | EncoderSteps) -> list[tuple[str, HookFn]]:
    """EditState: over the whole run (encoder, then decoder); EncoderSteps: a freeze of the
    whole state from step `steps` to the encoder's end."""
    stacks: tuple[str, ...]
    if isinstance(edit, EncoderSteps):
        edit, stacks = EditState(mode="freeze", from_step=edit.steps), ("encoder",)
    else:
        stacks = ("encoder", "decoder") if model.decoder is not None else ("encoder",)
    last = model.config.n_layers - 1
    hook = region_edit(edit)  # one hook for all: a freeze remembers the region wherever step from_step - 1 ran
    return [(name, hook) for name in [hook_names.STATE_INPUT, *(hook_names.state(stack, last) for stack in stacks)]]


def region_edit(edit: EditState) -> HookFn:
    """Zero the region at every step from `from_step`, or keep it as it was before that step."""
    frozen: dict[str, torch.Tensor] = {}

    def hook(state: torch.Tensor, point: HookPoint) -> torch.Tensor | None:  # [b, m, w, n]
        step = current_scope().get("step", BEFORE_FIRST_STEP)
        length = state.shape[-1]
        if edit.start >= length:
            raise InterventionError(f"the region starts at position {edit.start}; the state has {length} positions")
        region = (..., slice(edit.start, edit.stop))
        if step == edit.from_step - 1:
            frozen["region"] = state[region].clone()
        if step < edit.from_step:
            return None
        state = state.clone()
        state[region] = 0.0 if edit.mode == "zero" else frozen["region"]
        return state

    return hook


def gate_clamp_hooks(model: ActiveMemoryModel, clamp: ClampGate) -> list[tuple[str, HookFn]]:
    stacks = ("encoder", "decoder") if model.decoder is not None else ("encoder",)
    names = [hook_names.gate(stack, i, clamp.gate) for stack in stacks for i in range(model.config.n_layers)]

    def hook(gate: torch.Tensor, point: HookPoint) -> torch.Tensor | None:  # [b, m, w, n]
        if current_scope().get("step", BEFORE_FIRST_STEP) < clamp.from_step:
            return None
        return torch.full_like(gate, clamp.value)

    return [(name, hook) for name in names]
