"""What a family says of its feed-forward layers when they are read as key-value memories (paper 003):
which layers, their value vectors, the output embedding and how a layer's output and the last readout are
formed. The analyses that read them are inference.analyses.ff_values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

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
