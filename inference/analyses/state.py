"""A recurrent-step model's state, step by step, from a trace: what the State
page plays and the JSON API returns.

A model with the RECURRENT_STEPS capability hooks `input` (the state before
the first step) and, for every step of every layer of each stack
(`encoder`, and `decoder` where there is one), `{stack}.layers.{i}.state`,
`.update_gate` and `.reset_gate`, each [batch map width length] with the
step's global index; a decoder that reads an output tape hooks it as
`{stack}.tape`. Every function reads the first row of the batch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from inference.core.hook_names import STATE_INPUT, tape
from inference.core.trace import Trace

LAYER_HOOK = re.compile(r"^(?P<stack>\w+)\.layers\.(?P<layer>\d+)\.(?P<kind>state|update_gate|reset_gate)$")
MAP_GROUPS = 4


@dataclass(frozen=True)
class StateSteps:
    positions: list[str]  # the state's length axis: the source tokens, then padding
    steps: list[int]  # the global index of every step, in order (encoder steps, then decoder steps)
    stacks: list[str]  # the stack of each step ("encoder", "decoder")
    map_groups: list[tuple[int, int]]  # (first map, last map + 1) of each group
    state: list  # [steps, groups, width, length]: each map group's mean of the state after the step's last layer
    state_range: tuple[float, float]  # the least and largest value of `state` over all steps: one colour scale
    update: list  # [steps, length]: the update gate, mean over layers, maps and width (1: the state is kept)
    reset: list  # [steps, length]: the reset gate, the same mean
    change: list  # [steps, length]: L2 norm over maps and width of the state after the step minus before it
    tape: list | None  # [decoder steps, length]: L2 norm over maps and width of the output tape; None: no tape


def state_hooks(names: list[str]) -> list[str]:
    """Of a model's hook point names, those the state views read: the input, every layer's gates, the tape,
    and of the states only each stack's last layer's (the state after a step)."""
    last: dict[str, int] = {}
    for match in filter(None, map(LAYER_HOOK.match, names)):
        last[match["stack"]] = max(last.get(match["stack"], 0), int(match["layer"]))
    tapes = {tape(stack) for stack in last}

    def read(name: str) -> bool:
        match = LAYER_HOOK.match(name)
        if match is None:
            return name == STATE_INPUT or name in tapes
        return match["kind"] != "state" or int(match["layer"]) == last[match["stack"]]

    return [name for name in names if read(name)]


def _row(trace: Trace, name: str) -> list[tuple[int, torch.Tensor]]:
    """(global step, tensor [map width length] of the first row) of every call of a hook, in step order."""
    calls = trace.captures[name].calls
    return sorted(((call.index.get("step", 0), call.tensor[0].float()) for call in calls), key=lambda p: p[0])


def _layers(trace: Trace) -> dict[str, dict[str, list[str]]]:
    """{stack: {"state" | "update_gate" | "reset_gate": hook names by layer}}, stacks in order of first step."""
    found: dict[str, dict[str, dict[int, str]]] = {}
    for name in trace.captures:
        match = LAYER_HOOK.match(name)
        if match:
            kinds = found.setdefault(match["stack"], {})
            kinds.setdefault(match["kind"], {})[int(match["layer"])] = name
    if not found:
        raise ValueError("the trace has no recurrent-step hooks: trace the names state_hooks gives")
    first_step = {stack: _row(trace, next(iter(kinds["state"].values())))[0][0] for stack, kinds in found.items()}
    return {
        stack: {kind: [names[i] for i in sorted(names)] for kind, names in found[stack].items()}
        for stack in sorted(found, key=first_step.__getitem__)
    }


def l2_over_maps_and_width(x: torch.Tensor) -> torch.Tensor:  # [steps map width length] -> [steps length]
    """One reduction at a time: torch's reduction over several inner dimensions at once is many times slower on
    small tensors (1.5 ms against 0.04 on 2 cores)."""
    return x.square().sum(dim=1).sum(dim=1).sqrt()


def state_steps(trace: Trace, groups: int = MAP_GROUPS) -> StateSteps:
    """Every step of a traced recurrent-step run (the first source of the trace)."""
    stacks = _layers(trace)
    steps: list[int] = []
    stack_of: list[str] = []
    state: list[torch.Tensor] = []  # per stack: [steps, groups, width, length]
    update: list[torch.Tensor] = []  # per stack: [steps, length], and so are the two below
    reset: list[torch.Tensor] = []
    change: list[torch.Tensor] = []
    before = trace.captures[STATE_INPUT].calls[0].tensor[0].float()  # [map width length]
    maps = before.shape[0]
    bounds = [(g * maps // groups, (g + 1) * maps // groups) for g in range(min(groups, maps))]
    for stack, kinds in stacks.items():
        last = _row(trace, kinds["state"][-1])  # (step, [map width length]) after the last layer
        after = torch.stack([tensor for _, tensor in last])  # [steps map width length]
        steps += [step for step, _ in last]
        stack_of += [stack] * len(last)
        state.append(torch.stack([after[:, a:b].mean(dim=1) for a, b in bounds], dim=1))  # [steps groups width length]
        for kind, out in (("update_gate", update), ("reset_gate", reset)):
            per_layer = torch.stack(
                [torch.stack([tensor for _, tensor in _row(trace, name)]) for name in kinds[kind]]
            )  # [layers steps map width length]
            out.append(per_layer.mean(dim=0).mean(dim=1).mean(dim=1))  # [steps length]
        previous = torch.cat([before[None], after[:-1]])  # [steps map width length]: the state before each step
        change.append(l2_over_maps_and_width(after - previous))  # [steps length]
        before = after[-1]
    every_state = torch.cat(state)  # [steps groups width length]
    tape_hooks = [tape(stack) for stack in stacks if tape(stack) in trace.captures]
    tape_norms = (
        l2_over_maps_and_width(torch.stack([t for _, t in _row(trace, tape_hooks[0])])).tolist() if tape_hooks else None
    )  # [decoder steps length]
    return StateSteps(
        positions=trace.tokens["state"][0],
        steps=steps,
        stacks=stack_of,
        map_groups=bounds,
        state=every_state.tolist(),
        state_range=(every_state.min().item(), every_state.max().item()),
        update=torch.cat(update).tolist(),
        reset=torch.cat(reset).tolist(),
        change=torch.cat(change).tolist(),
        tape=tape_norms,
    )
