"""One layer's attention patterns with the tokens and roles of both axes:
what an attention map view needs, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from inference.core.hooks import hook_points
from inference.core.trace import Trace


@dataclass
class LayerAttention:
    stack: str  # "encoder.attn", "encoder.mem.attn", "decoder.self_attn", "decoder.cross_attn", ...
    layer: int
    weights: torch.Tensor  # [heads, q, k] of example 0
    query_tokens: list[str]
    key_tokens: list[str]
    query_roles: list[str]
    key_roles: list[str]


def pattern_hook_name(stack: str, layer: int) -> str:
    """'encoder.mem.attn', 2 -> 'encoder.layers.2.mem.attn.pattern'."""
    side, _, module = stack.partition(".")
    return f"{side}.layers.{layer}.{module}.pattern"


def attention_stacks(model: nn.Module) -> dict[str, int]:
    """Stack name -> number of layers, in model order."""
    stacks: dict[str, int] = {}
    for name in hook_points(model):
        parts = name.split(".")
        if parts[-1] == "pattern" and parts[1] == "layers":
            stack = ".".join([parts[0], *parts[3:-1]])
            stacks[stack] = max(stacks.get(stack, 0), int(parts[2]) + 1)
    return stacks


def layer_attention(trace: Trace, stack: str, layer: int, example: int = 0) -> LayerAttention:
    """Drop padding on both axes: a view shows real positions only."""
    name = pattern_hook_name(stack, layer)
    if name not in trace.captures:
        raise KeyError(f"the trace holds no {name}")
    capture = trace.captures[name]
    query_axis, key_axis = capture.positions["query"], capture.positions["key"]
    query_roles, key_roles = trace.axis_roles(query_axis, example), trace.axis_roles(key_axis, example)
    query_keep = [i for i, r in enumerate(query_roles) if r != "pad"]
    key_keep = [i for i, r in enumerate(key_roles) if r != "pad"]
    query_tokens, key_tokens = trace.axis_tokens(query_axis, example), trace.axis_tokens(key_axis, example)
    weights = capture.at()[example][:, query_keep][:, :, key_keep]  # [h, q_real, k_real]
    return LayerAttention(
        stack=stack,
        layer=layer,
        weights=weights,
        query_tokens=[query_tokens[i] for i in query_keep],
        key_tokens=[key_tokens[i] for i in key_keep],
        query_roles=[query_roles[i] for i in query_keep],
        key_roles=[key_roles[i] for i in key_keep],
    )
