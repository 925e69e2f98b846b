"""One layer's attention patterns with the tokens and roles of both axes:
what an attention map view needs, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from inference.core.axes import AxisRole
from inference.core.hook_names import pattern_hook_name, stack_of
from inference.core.hooks import hook_points
from inference.core.trace import Capture, Role, Trace


@dataclass
class LayerAttention:
    stack: str  # "encoder.attn", "encoder.mem.attn", "decoder.self_attn", "decoder.cross_attn", ...
    layer: int
    weights: torch.Tensor  # [heads, q, k] of example 0
    query_tokens: list[str]
    key_tokens: list[str]
    query_roles: list[Role]
    key_roles: list[Role]
    index: dict[str, int] = field(default_factory=dict)  # which call, where the hook ran more than once
    query_axis_role: AxisRole | None = None  # what the query / key positions are (the family's token axes)
    key_axis_role: AxisRole | None = None


def call_indices(capture: Capture) -> list[dict[str, int]]:
    """How each call of a capture is asked for: its index without the running
    count, e.g. {"segment": 2} (also when only one segment ran); {} for a hook
    that ran once outside any call scope; the running count where nothing else
    tells the calls apart."""
    indices = [{key: value for key, value in call.index.items() if key != "call"} for call in capture.calls]
    if len(indices) == 1:
        return indices
    return [index or call.index for index, call in zip(indices, capture.calls)]


def attention_stacks(model: nn.Module) -> dict[str, int]:
    """Stack name -> number of layers, in model order."""
    stacks: dict[str, int] = {}
    for name in hook_points(model):
        found = stack_of(name)
        if found:
            stacks[found[0]] = max(stacks.get(found[0], 0), found[1] + 1)
    return stacks


def pattern_heads(model: nn.Module) -> int:
    """The most heads of any attention pattern hook."""
    return max((p.sizes.get("head", 0) for name, p in hook_points(model).items() if stack_of(name)), default=0)


def layer_attention(trace: Trace, stack: str, layer: int, example: int = 0, **index: int) -> LayerAttention:
    """One call's pattern (`index`, e.g. segment=2; none: the only call),
    padding dropped on both axes: a view shows real positions only."""
    capture = trace.captures[pattern_hook_name(trace.captures, stack, layer)]
    query_axis, key_axis = capture.positions["query"], capture.positions["key"]
    query_roles = trace.axis_roles(query_axis, example, **index)
    key_roles = trace.axis_roles(key_axis, example, **index)
    query_keep = [i for i, r in enumerate(query_roles) if r != Role.PAD]
    key_keep = [i for i, r in enumerate(key_roles) if r != Role.PAD]
    query_tokens, key_tokens = (
        trace.axis_tokens(query_axis, example, **index),
        trace.axis_tokens(key_axis, example, **index),
    )
    weights = (
        capture.at(**index)[example].index_select(1, torch.tensor(query_keep)).index_select(2, torch.tensor(key_keep))
    )  # [h, q_real, k_real]; index_select with tensors, many times faster than indexing with lists
    return LayerAttention(
        stack=stack,
        layer=layer,
        weights=weights,
        query_tokens=[query_tokens[i] for i in query_keep],
        key_tokens=[key_tokens[i] for i in key_keep],
        query_roles=[query_roles[i] for i in query_keep],
        key_roles=[key_roles[i] for i in key_keep],
        index=index,
        query_axis_role=trace.run.token_axes.get(query_axis.name),
        key_axis_role=trace.run.token_axes.get(key_axis.name),
    )
