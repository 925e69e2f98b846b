"""Feed-forward values as distributions over the vocabulary (Geva et al.,
paper 003, Section 4): p_i = softmax(v_i · E^T) for every value v_i.

`FFMemories` holds the few inputs that every FF-memory analysis needs from a
model: which FF layers, their value vectors, the output embedding, how a
layer combines its residual with its FF output, and how E reads a vector of
the residual stream. `decoder_ff_memories` builds it for the decoder of the
translation models, `language_model_ff_memories` for the language model;
`ff_memories` picks by family, and every analysis runs unchanged on either.

Post-LN and the projection. What E reads in these models is the last
decoder layer's LayerNorm output (logits = LN_L(...) · E^T, no final norm of
its own). A value v_i reaches it only through its layer's norm,
LN(r + sum_i m_i v_i + b), which centres the sum, divides it by one positive
factor per position, multiplies it by the gain and adds the bias, and then
through every later layer. We project v_i directly through E, as the paper
does (its pre-LN language model also puts a final LayerNorm between the
residual stream and E, which the paper ignores): the numbers stay
comparable with the paper's, and folding in this layer's gain alone would
be a partial correction that later layers undo anyway. The price: the
centring and the gain can change which token is on top, so "the value's
top token" reads the direction v_i writes, not what the layer's output
finally shows; the aggregation analysis projects the layer output itself
and so measures that directly.

The language model is pre-LN with a final LayerNorm: its residual stream r
and layer output r + y are read as the model reads its last layer,
final_norm(h) · E^T (`FFMemories.stream_logits`, the "logit lens"); values
and FF outputs, which are not stream states but what a layer adds to one,
are projected directly, as the paper does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.capabilities import config_of
from inference.core.family import family_of
from inference.core.ff_memories import FFMemories


def ff_memories(model: nn.Module) -> FFMemories:
    """The FF memories of a model with FF keys, read as its family says (`Family.ff_memories`)."""
    return family_of(config_of(model).family).ff_memories(model)


ModuleT = TypeVar("ModuleT", bound=nn.Module)
NormParts = tuple[tuple[int, ...], torch.Tensor, torch.Tensor, float]  # F.layer_norm's shape, weight, bias, eps


def _part(model: nn.Module, name: str, kind: type[ModuleT]) -> ModuleT:
    """The submodule `name` (dotted) of `model`, which the readings below need to be a `kind`."""
    module = model.get_submodule(name)
    if not isinstance(module, kind):
        raise TypeError(f"{name} of a {type(model).__name__} is a {type(module).__name__}, not a {kind.__name__}")
    return module


def _values(ff: nn.Module) -> torch.Tensor:  # [d_ff, d]
    """Value v_i is column i of the second matrix; row i here."""
    return _part(ff, "w_out", nn.Linear).weight.detach().float().cpu().T.contiguous()


def _norm_parts(norm: nn.LayerNorm) -> NormParts:
    return norm.normalized_shape, norm.weight.detach().float().cpu(), norm.bias.detach().float().cpu(), norm.eps


def _output_embedding(model: nn.Module) -> torch.Tensor:  # [vocab, d]
    return model.get_parameter("embed.weight").detach().float().cpu()


def decoder_ff_memories(model: nn.Module) -> FFMemories:
    """The decoder FF layers of a post-LN translation model (`model.decoder.layers`). Layer output =
    LN(residual + FF output): the post-LN step with dropout off (inference)."""
    norms = {}
    values = {}
    for i in range(len(_part(model, "decoder.layers", nn.ModuleList))):
        name = f"decoder.layers.{i}.ff"
        values[name] = _values(_part(model, name, nn.Module))
        norms[name] = _norm_parts(_part(model, f"decoder.layers.{i}.ff_norm", nn.LayerNorm))

    def layer_output(layer: str, residual: torch.Tensor, ff_out: torch.Tensor) -> torch.Tensor:
        shape, weight, bias, eps = norms[layer]
        return F.layer_norm(residual + ff_out, shape, weight, bias, eps)

    return FFMemories(list(values), values, _output_embedding(model), layer_output)


def language_model_ff_memories(model: nn.Module, axis: str) -> FFMemories:
    """The FF layers of a pre-LN decoder-only model (`model.layers`, `model.final_norm`) over token axis `axis`.
    Pre-LN: layer output = residual + FF output; stream states are read through the final LayerNorm."""
    layers = range(len(_part(model, "layers", nn.ModuleList)))
    values = {f"layers.{i}.ff": _values(_part(model, f"layers.{i}.ff", nn.Module)) for i in layers}
    shape, weight, bias, eps = _norm_parts(_part(model, "final_norm", nn.LayerNorm))

    def layer_output(layer: str, residual: torch.Tensor, ff_out: torch.Tensor) -> torch.Tensor:
        return residual + ff_out

    def readout(h: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(h, shape, weight, bias, eps)

    return FFMemories(list(values), values, _output_embedding(model), layer_output, axis, readout)


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
