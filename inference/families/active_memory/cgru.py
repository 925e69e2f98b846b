"""The convolutional gated recurrent unit (CGRU) of the Neural GPU (paper 001).

    CGRU(s)    = u * s + (1 - u) * tanh(U * (r * s) + B)
    u          = σ'(U' * s + B'),   r = σ'(U'' * s + B'')
    CGRU^d(s, p): the same with W * p, W' * p, W'' * p added inside tanh, u and r
    σ'(x)      = clip(1.2 σ(x) - 0.1, 0, 1)   the cutoff sigmoid

`*` is a convolution with a kw × kh kernel and SAME padding over the state,
laid out here as [batch, maps, width, length] (the paper's [w, n, m] with the
maps as channels). Each layer names its gates and its output so every step
of every layer can be captured and edited (hook points below, called once
per step).
"""

from __future__ import annotations

import torch
from torch import nn

from inference.core.hooks import HookPoint

STATE_DIMS = "batch map width length"
STATE_AXIS = "state"  # the token axis a state's length runs over: the source's tokens, then padding
TARGET_AXIS = "tgt"  # the decoder's positions: the output so far
LENGTH = {"length": STATE_AXIS}  # the positions of every state hook point


def cutoff_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """clip(1.2 σ(x) - 0.1, 0, 1): a sigmoid that reaches exactly 0 and 1."""
    return (1.2 * torch.sigmoid(x) - 0.1).clamp(0.0, 1.0)


class CGRU(nn.Module):
    """One CGRU layer; with `reads_tape` it is CGRU^d, which also convolves an output tape.

    Hook points (one call per step):
        update_gate  [batch map width length]  u: 1 keeps the old state, 0 takes the candidate
        reset_gate   [batch map width length]  r: how much of the state the candidate reads
        state        [batch map width length]  the layer's new state
    """

    def __init__(self, maps: int, kernel_width: int, kernel_length: int, reads_tape: bool = False):
        super().__init__()
        padding = (kernel_width // 2, kernel_length // 2)  # SAME for odd kernels
        self.gates = nn.Conv2d(maps, 2 * maps, (kernel_width, kernel_length), padding=padding)  # U', U''
        self.candidate = nn.Conv2d(maps, maps, (kernel_width, kernel_length), padding=padding)  # U
        self.tape = (
            nn.Conv2d(maps, 3 * maps, (kernel_width, kernel_length), padding=padding, bias=False)  # W', W'', W
            if reads_tape
            else None
        )
        self.update_gate = HookPoint(STATE_DIMS, "update gate u (1 keeps the old state)", LENGTH, {"map": maps})
        self.reset_gate = HookPoint(
            STATE_DIMS, "reset gate r (share of the state the candidate reads)", LENGTH, {"map": maps}
        )
        self.state = HookPoint(STATE_DIMS, "the state after this layer", LENGTH, {"map": maps})

    def forward(self, s: torch.Tensor, tape: torch.Tensor | None = None) -> torch.Tensor:  # [b, m, w, n]
        update, reset = self.gates(s).chunk(2, dim=1)  # [b, m, w, n] each
        tape_candidate = 0.0
        if self.tape is not None:
            tape_update, tape_reset, tape_candidate = self.tape(tape).chunk(3, dim=1)  # [b, m, w, n] each
            update, reset = update + tape_update, reset + tape_reset
        u = self.update_gate(cutoff_sigmoid(update))
        r = self.reset_gate(cutoff_sigmoid(reset))
        candidate = torch.tanh(self.candidate(r * s) + tape_candidate)  # [b, m, w, n]
        return self.state(u * s + (1 - u) * candidate)
