"""The attention baseline of paper 001: a GRU encoder-decoder with attention
(Bahdanau et al.; the paper's "GRU + attention").

- Encoder: source tokens embedded (e), a bidirectional GRU, hidden 2 x h/2 = h.
- Decoder: a GRU cell reading the previous output's embedding and the
  previous context; attention (Luong's "general" score, h_k W enc_j) over the
  encoder's states, masked at padding; the output mixes the cell and the
  context, tanh(W_c [h_k; ctx_k]) [e], scored against the output embeddings (tied).

Hook points:

    encoder_states                 [batch position d_model]  the encoder's states (keys and values)
    cross_attn.weights             [batch key]              attention of one step (index `position`), editable
    cross_attn.pattern             [batch head query key]   every step's weights stacked: the record the
                                                            attention views read (one head)
    logits                         [batch position vocab]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from inference.core.capabilities import NoMemory, check_positions_and_special_ids
from inference.core.hooks import HookPoint, call_scope, name_hook_points

FAMILY_NAME = "gru_attention"


@dataclass
class GRUAttentionConfig(NoMemory):
    family: str = FAMILY_NAME
    vocab_size: int = 32
    embed_size: int = 32  # e
    d_model: int = 64  # h: the encoder's states (both directions) and the decoder cell
    dropout: float = 0.0  # on embeddings and outputs, in training
    max_positions: int = 512
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self):
        if self.family != FAMILY_NAME:
            raise ValueError(f"GRUAttentionConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        if self.d_model % 2 or min(self.embed_size, self.d_model) < 2:
            raise ValueError("d_model must be even (two directions) and the sizes at least 2")
        check_positions_and_special_ids(self)

    @property
    def title(self) -> str:
        return "GRU + attention"

    @property
    def summary(self) -> str:
        """The model in a line, for its description."""
        return (
            f"GRU + attention: embeddings {self.embed_size}, bidirectional GRU encoder, GRU decoder of {self.d_model}"
        )


class Attention(nn.Module):
    """Luong's "general" attention of one decoder state over the encoder's states."""

    def __init__(self, h: int):
        super().__init__()
        self.score = nn.Linear(h, h, bias=False)  # W of h_k W enc_j
        self.weights = HookPoint("batch key", "attention weights of one decoder step", {"key": "enc"})
        self.pattern = HookPoint(
            "batch head query key", "every step's weights (a record)", {"query": "dec", "key": "enc"}, {"head": 1}
        )

    def forward(self, hidden: torch.Tensor, states: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """hidden [b, h], states [b, n, h], real [b, n] -> weights [b, n]."""
        scores = torch.einsum("bh,bnh->bn", self.score(hidden), states).masked_fill(~real, float("-inf"))
        return self.weights(scores.softmax(dim=-1))


class GRUAttention(nn.Module):
    def __init__(self, config: GRUAttentionConfig):
        super().__init__()
        self.config = config
        e, h, vocab = config.embed_size, config.d_model, config.vocab_size
        self.source_embed = nn.Embedding(vocab, e, padding_idx=config.pad_id)
        self.target_embed = nn.Embedding(vocab, e, padding_idx=config.pad_id)  # also the output layer (tied)
        self.encoder_gru = nn.GRU(e, h // 2, batch_first=True, bidirectional=True)
        self.initial = nn.Linear(h, h)
        self.cell = nn.GRUCell(e + h, h)
        self.cross_attn = Attention(h)
        self.combine = nn.Linear(2 * h, e)
        self.dropout = nn.Dropout(config.dropout)
        self.encoder_states = HookPoint("batch position d_model", "the encoder's states", {"position": "enc"})
        self.logits = HookPoint("batch position vocab", "output logits", {"position": "dec"}, {"vocab": vocab})
        name_hook_points(self)

    def encode(self, src_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # [b, n] -> ([b, n, h], [b, h])
        real = src_ids != self.config.pad_id  # [b, n]
        packed = nn.utils.rnn.pack_padded_sequence(
            self.dropout(self.source_embed(src_ids)), real.sum(1).cpu(), batch_first=True, enforce_sorted=False
        )
        states, _ = self.encoder_gru(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=src_ids.shape[1])
        states = self.encoder_states(states)  # [b, n, h]
        mean = (states * real[..., None]).sum(1) / real.sum(1, keepdim=True)  # [b, h]
        return states, torch.tanh(self.initial(mean))

    def step(
        self,
        previous: torch.Tensor,
        hidden: torch.Tensor,
        context: torch.Tensor,
        states: torch.Tensor,
        real: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One decoder step: previous tokens [b] -> (logits [b, vocab], hidden, context [b, h], weights [b, n])."""
        hidden = self.cell(torch.cat([self.target_embed(previous), context], dim=-1), hidden)
        weights = self.cross_attn(hidden, states, real)  # [b, n]
        context = torch.einsum("bn,bnh->bh", weights, states)
        mixed = self.dropout(torch.tanh(self.combine(torch.cat([hidden, context], dim=-1))))  # [b, e]
        return mixed @ self.target_embed.weight.T, hidden, context, weights

    def run(self, src_ids: torch.Tensor, tgt_in: torch.Tensor | None, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced on tgt_in [b, t] (steps = t), or greedy (tgt_in None, up to `steps`, stopping once
        every row has said EOS) -> (logits [b, t, vocab], tokens [b, t]: its own choice at every step)."""
        states, hidden = self.encode(src_ids)
        real = src_ids != self.config.pad_id
        context = states.new_zeros(states.shape[0], states.shape[2])
        previous = src_ids.new_full((src_ids.shape[0],), self.config.bos_id)
        logits, weights, chosen = [], [], []
        finished = torch.zeros_like(real[:, 0])  # [b] greedy rows that have said EOS
        for k in range(steps):
            with call_scope(position=k):
                step_logits, hidden, context, step_weights = self.step(previous, hidden, context, states, real)
            logits.append(step_logits)
            weights.append(step_weights)
            chosen.append(step_logits.argmax(dim=-1))
            previous = tgt_in[:, k + 1] if tgt_in is not None and k + 1 < steps else chosen[-1]
            finished = finished | (chosen[-1] == self.config.eos_id)
            if tgt_in is None and finished.all():
                break
        self.cross_attn.pattern(torch.stack(weights, dim=1).unsqueeze(1))  # [b, 1, steps, n]
        return self.logits(torch.stack(logits, dim=1)), torch.stack(chosen, dim=1)

    def forward(self, src_ids: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits [b, t, vocab]."""
        return self.run(src_ids, tgt_in, tgt_in.shape[1])[0]

    @torch.no_grad()
    def greedy(self, src_ids: torch.Tensor, max_new_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens [b, t], logits [b, t, vocab]) of its own greedy outputs, t at most max_new_tokens + 1:
        it stops once every row has said EOS."""
        logits, tokens = self.run(src_ids, None, max_new_tokens + 1)
        return tokens, logits
