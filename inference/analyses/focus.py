"""Two ways a translation model focuses on its source, for one sentence: the
share of each source token in the integrated-gradients attribution of every
output token, and, where the model attends to its source, the attention
weights of its last source-attention layer; with how peaked each is and how
often the two pick the same source token."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import nn

from inference.analyses.attention import LayerAttention, attention_stacks
from inference.analyses.source_attribution import SourceAttribution
from inference.core.axes import AxisRole
from inference.core.hook_names import pattern_hook_name
from inference.core.hooks import hook_points


@dataclass(frozen=True)
class Focus:
    output_tokens: list[str]
    source_tokens: list[str]
    attribution_share: list[list[float]]  # [outputs, sources]: |IG| of each source token over its row's sum
    attention: list[list[float]] | None  # [outputs, sources]: mean over heads; None: the model does not attend
    peak_attribution: float  # mean over outputs of the largest share in the row
    peak_attention: float | None
    agreement: float | None  # share of outputs whose largest attribution and largest attention are one token


def source_attention_stack(model: nn.Module, token_axes: Mapping[str, AxisRole]) -> tuple[str, int] | None:
    """(stack, last layer) of the attention whose keys are the source and whose queries are not (the outputs), by
    the roles the model's family gives its token axes; None where it has none."""
    source = {name for name, role in token_axes.items() if role is AxisRole.SOURCE}
    points = hook_points(model)
    for stack, layers in attention_stacks(model).items():
        positions = points[pattern_hook_name(points, stack, layers - 1)].positions
        if positions["key"].name in source and positions["query"].name not in source:
            return stack, layers - 1
    return None


def row_shares(matrix: torch.Tensor) -> torch.Tensor:  # [outputs, sources] -> the same, rows summing to 1
    magnitude = matrix.abs()
    return magnitude / magnitude.sum(dim=1, keepdim=True).clamp_min(1e-12)


def focus(attribution: SourceAttribution, attention: LayerAttention | None) -> Focus:
    """The two views of one run. Attention query k is the decoder step that chose output k (its query token
    is the input of that step: BOS, then the outputs); an attribution cut short covers the first outputs only."""
    shares = row_shares(torch.tensor(attribution.integrated_gradients))  # [outputs, sources]
    outputs = len(attribution.output_tokens)
    weights = None
    if attention is not None:
        if len(attention.query_tokens) < outputs or attention.key_tokens != attribution.source_tokens:
            raise ValueError("the attention and the attribution are of different runs")
        weights = attention.weights[:, :outputs].float().mean(dim=0)  # [outputs, sources]
    return Focus(
        output_tokens=attribution.output_tokens,
        source_tokens=attribution.source_tokens,
        attribution_share=shares.tolist(),
        attention=weights.tolist() if weights is not None else None,
        peak_attribution=float(shares.max(dim=1).values.mean()),
        peak_attention=float(weights.max(dim=1).values.mean()) if weights is not None else None,
        agreement=float((shares.argmax(1) == weights.argmax(1)).float().mean()) if weights is not None else None,
    )
