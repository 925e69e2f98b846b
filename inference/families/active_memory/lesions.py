"""Lesions of the state tensor, as hooks on the state after each step's last
layer (and on s0, for an edit from step 0): a region zeroed or frozen from a
step on, the encoder stopped after fewer steps, a gate clamped."""

from __future__ import annotations

import torch

from inference.core import hook_names
from inference.core.hooks import HookFn, HookPoint, current_scope
from inference.core.interventions import ClampGate, EditState, EncoderSteps, InterventionError
from inference.families.active_memory.model import ActiveMemoryModel

BEFORE_FIRST_STEP = -1  # the step index of s0, which no step has touched yet


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
