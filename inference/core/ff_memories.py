"""What a family says of its feed-forward layers when they are read as key-value memories (paper 003):
which layers, their value vectors, the output embedding and how a layer's output and the last readout are
formed, and the readings of the built-in families' layers (`decoder_ff_memories`, `language_model_ff_memories`).
The analyses that read them are inference.analyses.ff_values.

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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.hook_names import ff_keys, ff_output

# (layer name, residual [..., d], FF output [..., d]) -> the layer's output [..., d]
LayerOutputFn = Callable[[str, torch.Tensor, torch.Tensor], torch.Tensor]


# a residual-stream vector [..., d] -> what the output embedding reads [..., d]
ReadoutFn = Callable[[torch.Tensor], torch.Tensor]


def _as_read(h: torch.Tensor) -> torch.Tensor:
    """Post-LN decoders: every stream state is already a LayerNorm output, as E reads it."""
    return h


@dataclass
class FFMemories:
    """What the FF-memory analyses read from a model; CPU float tensors."""

    layers: list[str]  # FF module names in depth order, e.g. "decoder.layers.0.ff"
    values: dict[str, torch.Tensor]  # layer -> [d_ff, d]: row i is value v_i (column i of w_out)
    output_embedding: torch.Tensor  # [vocab, d] E; the logits of a vector h are h · E^T
    layer_output: LayerOutputFn
    axis: str = "dec"  # the trace axis whose positions are the predictions
    readout: ReadoutFn = _as_read
    output_bias: torch.Tensor | None = None  # [vocab] added to every logit (Marian's final logits bias), or None
    # What analyses derive from the weights alone, kept for the next request (the weights do not change), by key
    derived: dict[tuple, torch.Tensor] = field(default_factory=dict, init=False, repr=False, compare=False)

    @staticmethod
    def residual_hook(layer: str) -> str:
        """The hook of the residual entering an FF layer: its sibling `resid_mid`."""
        return layer.rpartition(".")[0] + ".resid_mid"

    def capture_hooks(self) -> list[str]:
        """What a trace must record for the aggregation and the logit lens."""
        return [hook for layer in self.layers for hook in (self.residual_hook(layer), ff_keys(layer), ff_output(layer))]

    def key_hooks(self) -> list[str]:
        return [ff_keys(layer) for layer in self.layers]

    def stream_logits(self, h: torch.Tensor) -> torch.Tensor:  # [..., d] -> [..., vocab]
        """Logits of a residual-stream state, read as the model reads its last layer."""
        logits = self.readout(h) @ self.output_embedding.T
        return logits if self.output_bias is None else logits + self.output_bias

    def lens_logits(self, r: torch.Tensor, y: torch.Tensor, o: torch.Tensor) -> torch.Tensor:  # 3 x [n, d]
        """[3, n, vocab]: the logit lens of one layer, in one product with the output embedding (a third less time
        than three on 2 cores): the residual r entering the FF layer and the layer's output o read as stream states
        (`stream_logits`), the FF output y alone as it is (y · E^T, no readout, no bias)."""
        logits = torch.stack([self.readout(r), y, self.readout(o)]) @ self.output_embedding.T
        if self.output_bias is not None:
            logits[0::2] += self.output_bias  # the two stream states
        return logits


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
