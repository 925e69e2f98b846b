"""Feed-forward values as distributions over the vocabulary (Geva et al.,
paper 003, Section 4): p_i = softmax(v_i · E^T) for every value v_i.

The inputs every FF-memory analysis reads from a model (`FFMemories`, built by
`inference.core.ff_memories`: how each family's layers are read, post-LN and
the projection explained there); `ff_memories` picks the family's reading.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from inference.core.family import family_of_model
from inference.core.ff_memories import FFMemories


def ff_memories(model: nn.Module) -> FFMemories:
    """The FF memories of a model with FF keys, read as its family says (`Family.ff_memories`)."""
    return family_of_model(model).ff_memories(model)


def value_logits(memories: FFMemories, layer: str) -> torch.Tensor:  # [d_ff, vocab]
    """v_i · E^T for every value of one layer."""
    return memories.values[layer] @ memories.output_embedding.T


@dataclass
class ValueProjection:
    layer: str
    token_ids: torch.Tensor  # [d_ff, top_k] long, the most probable tokens of p_i, best first
    probabilities: torch.Tensor  # [d_ff, top_k] their probabilities under p_i
    value_norms: torch.Tensor  # [d_ff] ||v_i||: how hard a value pushes when its key fires


def value_projections(memories: FFMemories, top_k: int = 10) -> list[ValueProjection]:
    """The top-k tokens of p_i = softmax(v_i · E^T) for every value of every layer."""
    projections = []
    for layer in memories.layers:
        probabilities, token_ids = value_logits(memories, layer).softmax(dim=-1).topk(top_k, dim=-1)  # [d_ff, top_k]
        projections.append(ValueProjection(layer, token_ids, probabilities, memories.values[layer].norm(dim=-1)))
    return projections
