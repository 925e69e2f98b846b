"""Active memory (paper 001, Kaiser & Bengio; the Neural GPU of Kaiser &
Sutskever): the memory is one state tensor s [maps m, width w, length n]
that every step rewrites as a whole with convolutional GRUs (cgru.py).

- Input: the source's n tokens embedded (E) into the first row of s0
  (s0[:, 0, k] = E[i_k]), zeros elsewhere; the state is `state_length(n)`
  long (padded), so an output longer than the input has room.
- Encoder: the l CGRU layers applied in turn, `length` steps, shared weights;
  s_fin is the state after the last step. In training the sharing may be
  relaxed (the reference code's device): r sets of the layers' weights, step
  t using set t mod r, pulled together by a penalty on their distance
  (`relaxation_distance`); `shared_copy` averages them into the one set of
  weights every shipped model has (r = 1).
- Output, by `variant`:
  - "neural_gpu": l_k = O s_fin[:, 0, k], every output independent;
  - "markovian": l_k = O concat(s_fin[:, 0, k], E' o_{k-1}), o_{-1} = BOS;
  - "extended": an active memory decoder: d_0 = s_fin, a tape p of the
    same shape starts at zero; step k runs the decoder CGRUs on (d, p),
    l_k = O d_{k+1}[:, 0, k], and the output o_k is embedded (E') and
    written at tape position k. In training a share `scheduled_sampling` of
    tape entries is the model's own output instead of the target's.

One step axis covers the whole computation: encoder steps 0..n-1, then the
decoder's step k is step n + k. Hook points, one call per step (index `step`):

    input                             [batch map width length]  s0: the embedded source
    encoder.layers.{i}.update_gate    [batch map width length]  u
    encoder.layers.{i}.reset_gate     [batch map width length]  r
    encoder.layers.{i}.state          [batch map width length]  the state after layer i
    decoder.tape                      [batch map width length]  the tape the step reads (extended)
    decoder.layers.{i}.*              as the encoder's (extended)
    logits                            [batch position vocab]    one call, every output position

The length axis of every state runs over the token axis "state": the
source's tokens, then padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.capabilities import check_positions_and_special_ids
from inference.core.hooks import HookPoint, call_scope, name_hook_points
from inference.core.refusals import InputRefused
from inference.families.active_memory.cgru import CGRU, LENGTH, STATE_DIMS, TARGET_AXIS

FAMILY_NAME = "active_memory"
VARIANTS = ("neural_gpu", "markovian", "extended")
VARIANT_TITLES = {
    "neural_gpu": "Neural GPU",
    "markovian": "Markovian Neural GPU",
    "extended": "Extended Neural GPU",
}


@dataclass
class ActiveMemoryConfig:
    family: str = FAMILY_NAME
    variant: Literal["neural_gpu", "markovian", "extended"] = "extended"
    vocab_size: int = 32
    maps: int = 24  # m: the state's depth, the paper's 512 for translation
    width: int = 4  # w
    n_layers: int = 2  # l CGRU layers per step
    kernel_width: int = 3  # kw, across the width
    kernel_length: int = 3  # kh, along the length
    dropout: float = 0.0  # on the state after every step, in training
    length_factor: float = 1.0  # a source of n tokens gets a state ceil(length_factor * n) long
    scheduled_sampling: float = 0.0  # extended, in training: share of tape entries taken from its own output
    relaxed_sets: int = 1  # r sets of recurrence weights, step t using set t mod r (training only; 1: shared)
    max_positions: int = 512  # the longest state
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self):
        if self.family != FAMILY_NAME:
            raise ValueError(f"ActiveMemoryConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant is one of {', '.join(VARIANTS)}, got {self.variant!r}")
        if min(self.maps, self.width, self.n_layers) < 1:
            raise ValueError("maps, width and n_layers must be at least 1")
        if self.kernel_width % 2 == 0 or self.kernel_length % 2 == 0:
            raise ValueError("kernel sizes must be odd, so SAME padding keeps the state's shape")
        if not 1.0 <= self.length_factor <= 4.0:
            raise ValueError(f"length_factor is between 1 and 4, got {self.length_factor}")
        if not 0.0 <= self.scheduled_sampling <= 1.0 or not 0.0 <= self.dropout < 1.0:
            raise ValueError("scheduled_sampling is a share (0 to 1) and dropout below 1")
        if not 1 <= self.relaxed_sets <= 16:
            raise ValueError(f"relaxed_sets is between 1 and 16, got {self.relaxed_sets}")
        check_positions_and_special_ids(self)

    @property
    def memory_size(self) -> int:
        return 0  # the state is not a set of slots: no memory-size lesion

    @property
    def max_memory_size(self) -> int:
        return 0

    @property
    def d_model(self) -> int:
        """The width of one state cell (the learning-rate schedule's d_model)."""
        return self.maps

    @property
    def title(self) -> str:
        return VARIANT_TITLES[self.variant]

    @property
    def summary(self) -> str:
        """The model in a line, for its description."""
        return (
            f"{self.title}: state of {self.maps} maps x width {self.width}, {self.n_layers} CGRU layers, "
            f"kernel {self.kernel_width}x{self.kernel_length}, state {self.length_factor:g} x the source's length"
        )

    def state_length(self, source_length: int) -> int:
        """The state's length for a source of `source_length` tokens (EOS included)."""
        return min(math.ceil(self.length_factor * source_length), self.max_positions)


class Recurrence(nn.Module):
    """The l CGRU layers one step applies in turn, then dropout on the state. With relaxed sharing, `relaxed`
    holds sets 1..r-1 of the layers (set 0 is `layers`, whose hook points the pages read)."""

    def __init__(self, config: ActiveMemoryConfig, reads_tape: bool):
        super().__init__()

        def layer_set() -> nn.ModuleList:
            return nn.ModuleList(
                CGRU(config.maps, config.kernel_width, config.kernel_length, reads_tape) for _ in range(config.n_layers)
            )

        self.layers = layer_set()
        self.relaxed = nn.ModuleList(layer_set() for _ in range(config.relaxed_sets - 1))
        for relaxed in self.relaxed:  # the sets start shared and drift apart in training
            relaxed.load_state_dict(self.layers.state_dict())
        self.dropout = nn.Dropout(config.dropout)
        self.tape = (
            HookPoint(STATE_DIMS, "the output tape: emitted tokens embedded in the first row", LENGTH)
            if reads_tape
            else None
        )

    def forward(self, s: torch.Tensor, tape: torch.Tensor | None = None, step: int = 0) -> torch.Tensor:
        """s [b, m, w, n] (and the tape, of the same shape) -> the state after step `step`."""
        if self.tape is not None:
            tape = self.tape(tape)
        sets = self.weight_sets()
        for layer in sets[step % len(sets)]:
            s = layer(s, tape)
        return self.dropout(s)

    def weight_sets(self) -> list[nn.ModuleList]:
        """Set 0 (`layers`), then the relaxed sets 1..r-1."""
        return [self.layers, *self.relaxed]

    def relaxation_distance(self) -> torch.Tensor:
        """Sum over weights of the squared distance of every set from the sets' mean (0 with one set)."""
        sets = self.weight_sets()
        stacks = (torch.stack(weights) for weights in zip(*(layer_set.parameters() for layer_set in sets), strict=True))
        return torch.stack([(stacked - stacked.mean(0)).pow(2).sum() for stacked in stacks]).sum()  # stacked [r, ...]

    def mean_weights(self) -> dict[str, torch.Tensor]:
        """The state dict of `layers` holding every weight's mean over the sets."""
        named = [dict(layer_set.named_parameters()) for layer_set in self.weight_sets()]
        return {name: torch.stack([weights[name] for weights in named]).mean(0) for name in named[0]}


class ActiveMemoryModel(nn.Module):
    def __init__(self, config: ActiveMemoryConfig):
        super().__init__()
        self.config = config
        m, vocab = config.maps, config.vocab_size
        self.embed = nn.Embedding(vocab, m, padding_idx=config.pad_id)  # E
        self.input = HookPoint(STATE_DIMS, "s0: the embedded source in the first row", LENGTH)
        self.encoder = Recurrence(config, reads_tape=False)
        reads_outputs = config.variant in ("markovian", "extended")
        self.output_embed = nn.Embedding(vocab, m, padding_idx=config.pad_id) if reads_outputs else None  # E'
        self.decoder = Recurrence(config, reads_tape=True) if config.variant == "extended" else None
        self.output = nn.Linear(2 * m if config.variant == "markovian" else m, vocab)  # O
        self.logits = HookPoint("batch position vocab", "output logits", {"position": TARGET_AXIS}, {"vocab": vocab})
        name_hook_points(self)

    def _output_embed(self) -> nn.Embedding:
        """E', the embedding of the tokens output so far: Markovian and Extended models only."""
        if self.output_embed is None:
            raise TypeError(f"a {self.config.variant} model does not embed its outputs")
        return self.output_embed

    def recurrences(self) -> list[Recurrence]:
        """The encoder's recurrence, and the decoder's where there is one."""
        return [self.encoder] if self.decoder is None else [self.encoder, self.decoder]

    def relaxation_distance(self) -> torch.Tensor:
        """How far the relaxed weight sets are apart: the penalty that pulls them together in training."""
        return torch.stack([recurrence.relaxation_distance() for recurrence in self.recurrences()]).sum()

    def shared_copy(self) -> ActiveMemoryModel:
        """This model with one set of recurrence weights, each the mean of its r sets (itself when r = 1), in the
        same mode and on the same device."""
        if self.config.relaxed_sets == 1:
            return self
        shared = ActiveMemoryModel(replace(self.config, relaxed_sets=1))
        weights = {name: tensor for name, tensor in self.state_dict().items() if ".relaxed." not in name}
        for prefix, recurrence in (("encoder", self.encoder), ("decoder", self.decoder)):
            if recurrence is not None:
                weights |= {f"{prefix}.layers.{name}": mean for name, mean in recurrence.mean_weights().items()}
        shared.load_state_dict(weights)
        return shared.to(next(self.parameters()).device).train(self.training)

    def _decoder(self) -> Recurrence:
        """The active memory decoder: Extended models only."""
        if self.decoder is None:
            raise TypeError(f"a {self.config.variant} model has no active memory decoder")
        return self.decoder

    def encode(self, src_ids: torch.Tensor, length: int) -> torch.Tensor:  # [b, n] -> s_fin [b, m, w, length]
        """Embed the source into s0 (`length` long) and run `length` steps."""
        b, n = src_ids.shape
        if length < n:
            raise InputRefused(f"a state of length {length} cannot hold {n} source tokens")
        first_row = F.pad(self.embed(src_ids).transpose(1, 2), (0, length - n))  # [b, m, length]
        rest = first_row.new_zeros(b, self.config.maps, self.config.width - 1, length)
        s = self.input(torch.cat([first_row.unsqueeze(2), rest], dim=2))  # [b, m, w, length]
        for step in range(length):
            with call_scope(step=step):
                s = self.encoder(s, step=step)
        return s

    def forward(self, src_ids: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits [b, t, vocab] of src_ids [b, n] and tgt_in [b, t] (BOS + target)."""
        t = tgt_in.shape[1]
        length = max(self.config.state_length(src_ids.shape[1]), t)
        final = self.encode(src_ids, length)  # [b, m, w, length]
        if self.config.variant == "extended":
            logits, _ = self.run_decoder(final, tgt_in[:, 1:], t, length)
        else:
            logits = self.read_outputs(final, tgt_in)
        return self.logits(logits)

    def read_outputs(self, final: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        """Neural GPU and Markovian outputs: [b, m, w, n], previous tokens [b, t] -> logits [b, t, vocab]."""
        t = previous.shape[1]
        cells = final[:, :, 0, :t].transpose(1, 2)  # [b, t, m]
        if self.config.variant == "markovian":
            cells = torch.cat([cells, self._output_embed()(previous)], dim=-1)  # [b, t, 2m]
        return self.output(cells)

    def run_decoder(
        self, final: torch.Tensor, forced: torch.Tensor | None, steps: int, length: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The active memory decoder from s_fin [b, m, w, length] for `steps` outputs.
        forced [b, >= steps-1]: the tokens written to the tape (teacher forcing; with
        scheduled sampling in training some are replaced by the model's own); None:
        its own greedy outputs. Returns (logits [b, steps, vocab], tokens written [b, steps])."""
        b = final.shape[0]
        d = final
        written = final.new_full((b, length), self.config.pad_id, dtype=torch.long)  # the tape's tokens
        logits = []
        rate = self.config.scheduled_sampling if self.training else 0.0
        for k in range(steps):
            with call_scope(step=length + k):
                d = self._decoder()(d, self._tape_tensor(written), step=k)  # tape [b, m, w, length]
                step_logits = self.output(d[:, :, 0, k])  # [b, vocab]
            logits.append(step_logits)
            chosen = step_logits.argmax(dim=-1)  # [b]
            if forced is not None and k < forced.shape[1]:
                own = torch.rand(b, device=final.device) < rate
                chosen = torch.where(own, chosen, forced[:, k])
            written = written.clone()
            written[:, k] = chosen
        return torch.stack(logits, dim=1), written[:, :steps]

    def _tape_tensor(self, written: torch.Tensor) -> torch.Tensor:  # [b, length] -> [b, m, w, length]
        first_row = self._output_embed()(written).transpose(1, 2)  # [b, m, length]; pad embeds to zero
        rest = first_row.new_zeros(first_row.shape[0], self.config.maps, self.config.width - 1, written.shape[1])
        return torch.cat([first_row.unsqueeze(2), rest], dim=2)

    @torch.no_grad()
    def greedy(self, src_ids: torch.Tensor, max_new_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy outputs of sources of one length: src_ids [b, n] -> (tokens [b, t], logits [b, t, vocab]),
        t at most the state's length and max_new_tokens + 1 (the EOS)."""
        length = self.config.state_length(src_ids.shape[1])
        steps = min(length, max_new_tokens + 1)
        final = self.encode(src_ids, length)
        if self.config.variant == "extended":
            logits, tokens = self.run_decoder(final, None, steps, length)
        elif self.config.variant == "markovian":
            logits, tokens = self._markovian_greedy(final, steps)
        else:
            logits = self.read_outputs(final, src_ids.new_zeros(src_ids.shape[0], steps))
            tokens = logits.argmax(dim=-1)
        return tokens, self.logits(logits)

    def _markovian_greedy(self, final: torch.Tensor, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
        previous = final.new_full((final.shape[0], 1), self.config.bos_id, dtype=torch.long)  # [b, 1]
        logits = []
        for k in range(steps):
            cell = torch.cat([final[:, :, 0, k], self._output_embed()(previous[:, -1])], dim=-1)  # [b, 2m]
            logits.append(self.output(cell))
            previous = torch.cat([previous, logits[-1].argmax(dim=-1, keepdim=True)], dim=1)
        return torch.stack(logits, dim=1), previous[:, 1:]
