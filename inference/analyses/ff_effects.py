"""Which feed-forward keys this run's predictions lean on (paper 003 read on one input): each key's direct
effect on the margin of every prediction, linearised at the last layer's output.

At a position t, the model's top token a beats its runner-up b by the margin logit_a - logit_b. Key i of
layer l adds m_i(t) v_i to the residual stream; by the direct path its share of the margin is
m_i(t) v_i · g_t, with g_t the gradient of the margin with respect to the stream state the readout reads
(the last layer's output). A key whose share is at least the margin would, zeroed, flip the prediction by
its direct effect alone (exactly so where the readout is linear; later layers and normalisation change it
otherwise, which the page's run then shows). Pure: a trace and the model's FFMemories in, numbers out."""

from __future__ import annotations

import torch

from inference.analyses.ff_aggregation import example_positions, layer_vectors
from inference.core.ff_memories import FFMemories
from inference.core.trace import Trace


def margin_gradients(trace: Trace, memories: FFMemories, example: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(margins [t], gradients [t, d]) of the top token's logit over the runner-up's at every real position of one
    example, with respect to the last layer's output."""
    examples, positions = example_positions(trace, memories.axis, example)  # [t], [t]
    *_, last = layer_vectors(trace, memories, memories.layers[-1], examples, positions)  # [t, d]
    state = last.detach().requires_grad_(True)
    with torch.enable_grad():
        logits = memories.stream_logits(state)  # [t, vocab]
        top = logits.topk(2, dim=-1).values  # [t, 2]
        margins = top[:, 0] - top[:, 1]  # [t]
        margins.sum().backward()  # positions are independent: each row's gradient is its own margin's
    return margins.detach(), state.grad


def key_effects(trace: Trace, memories: FFMemories, layer: str, example: int = 0) -> torch.Tensor:  # [d_ff]
    """Each key's largest direct share of a prediction's margin in the run, over its positions (1.0: as large as
    the margin; negative: the key only argues against the predictions)."""
    margins, gradients = margin_gradients(trace, memories, example)  # [t], [t, d]
    m, *_ = layer_vectors(trace, memories, layer, *example_positions(trace, memories.axis, example))  # [t, d_ff]
    along = gradients @ memories.values[layer].T  # [t, d_ff]: v_i · g_t
    shares = m * along / margins.clamp_min(1e-6)[:, None]  # [t, d_ff]
    return shares.max(dim=0).values
