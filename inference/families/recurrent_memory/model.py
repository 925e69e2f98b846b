"""The Recurrent Memory Transformer (Bulatov, Kuratov & Burtsev, paper 002):
a decoder-only Transformer that reads a long input segment by segment and
hands memory tokens from one segment to the next.

Each segment's input is [read memory ; segment tokens ; write memory]: the
same m memory vectors at both ends. The write block's final hidden states
become the next segment's memory. The attention mask (the paper's, as in
its public code):

- sequence rows: causal over the segment, and the whole read block; never the write block;
- read rows: the whole read block;
- write rows: everything before them (read block and segment) and the whole write block.

Choices made here:

- Pre-LN layers with a final LayerNorm (`PreNormAttentionFeedForward`, as the
  shipped language model); memory vectors enter unscaled and carry no
  position; segment tokens get sinusoidal positions 0..L-1 within their
  segment, so every segment looks the same to the model.
- The new memory is the write block's output of the last layer, before the
  final LayerNorm (the stream the next segment's layers add to).
- Backpropagation through time (`bptt_depth`): 0 detaches the memory at
  every segment boundary; k > 0 lets gradients flow through k handoffs,
  cutting the graph at every k-th boundary; -1 never cuts it.
- Memory of another size at inference (a lesion) cycles the trained
  initial vectors: slot j starts as vector j mod m.

Hook points, called once per segment (call index `segment`) on the token
axis "seg" (read_mem, segment tokens, write_mem):

    memory.read                       [batch slot d_model]  memory entering the segment
    layers.{i}.attn.{mask,pattern,z}  attention over the segment's block layout
    layers.{i}.resid_mid, layers.{i}.ff.{keys,out}
    memory.write                      [batch slot d_model]  memory leaving the segment (next segment's read)
    logits                            [batch position vocab]  per segment, for its token positions
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.family import check_positions_and_special_ids
from inference.core.hooks import HookPoint, call_scope, name_hook_points
from inference.layers import PreNormAttentionFeedForward, TokenEmbedding

CONFIG_NAME = "rmt"
AXIS = "seg"


@dataclass
class RecurrentMemoryConfig:
    family: str = CONFIG_NAME
    vocab_size: int = 64
    d_model: int = 64
    d_ff: int = 256
    n_heads: int = 4
    n_layers: int = 2
    dropout: float = 0.0
    segment_length: int = 24  # tokens per segment
    memory_size: int = 6  # m memory tokens, read and written
    bptt_depth: int = 0  # memory handoffs gradients flow through: 0 detach, -1 all
    max_positions: int = 4096  # tokens of a whole input, all segments
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self):
        if self.family != CONFIG_NAME:
            raise ValueError(f"RecurrentMemoryConfig has family {CONFIG_NAME!r}, not {self.family!r}")
        if self.memory_size < 1 or self.segment_length < 1:
            raise ValueError("memory_size and segment_length must be at least 1")
        if self.bptt_depth < -1:
            raise ValueError(f"bptt_depth is -1 (all), 0 (detach) or a number of segments, got {self.bptt_depth}")
        if self.d_model % 2 or self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} must be even and divisible by n_heads {self.n_heads}")
        check_positions_and_special_ids(self)

    @property
    def max_memory_size(self) -> int:
        """Largest memory a lesion may ask for: twice the trained size."""
        return 2 * self.memory_size


def segment_mask(m: int, real: torch.Tensor) -> torch.Tensor:  # real [b, L] -> [b, 1, m+L+m, m+L+m] bool
    """Who may attend whom in one segment (module doc); pad tokens are no key."""
    b, length = real.shape
    n = m + length + m
    mask = torch.zeros(n, n, dtype=torch.bool, device=real.device)
    read, tokens, write = slice(0, m), slice(m, m + length), slice(m + length, n)
    mask[read, read] = True
    mask[tokens, read] = True
    mask[tokens, tokens] = torch.ones(length, length, dtype=torch.bool, device=real.device).tril()
    mask[write, : m + length] = True
    mask[write, write] = True
    keys = torch.cat([real.new_ones(b, m), real, real.new_ones(b, m)], dim=1)  # [b, n]
    return mask[None, None] & keys[:, None, None, :]


class RecurrentMemoryTransformer(nn.Module):
    def __init__(self, config: RecurrentMemoryConfig):
        super().__init__()
        c = self.config = config
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, c.segment_length, c.dropout, c.pad_id)
        self.memory_init = nn.Parameter(torch.randn(c.memory_size, c.d_model))  # [m, d] initial memory
        self.memory = nn.Module()
        self.memory.read = HookPoint("batch slot d_model", "memory entering a segment")
        self.layers = nn.ModuleList(
            PreNormAttentionFeedForward(c.d_model, c.n_heads, c.d_ff, c.dropout, (AXIS, AXIS))
            for _ in range(c.n_layers)
        )
        self.memory.write = HookPoint("batch slot d_model", "memory leaving a segment: the write block's output")
        self.final_norm = nn.LayerNorm(c.d_model)
        self.logits = HookPoint("batch position vocab", "next-token logits of a segment's tokens")
        name_hook_points(self)

    def initial_memory(self, batch: int, memory_size: int) -> torch.Tensor:  # [b, m, d]
        index = torch.arange(memory_size, device=self.memory_init.device) % self.config.memory_size
        return self.memory_init[index].unsqueeze(0).expand(batch, -1, -1)

    def segment(self, memory: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One segment: memory [b, m, d], ids [b, L] -> (logits [b, L, vocab], new memory [b, m, d])."""
        m, length = memory.shape[1], ids.shape[1]
        memory = self.memory.read(memory)
        x = torch.cat([memory, self.embed(ids), memory], dim=1)  # [b, m+L+m, d]
        mask = segment_mask(m, ids != self.config.pad_id)
        for layer in self.layers:
            x = layer(x, mask)
        new_memory = self.memory.write(x[:, m + length :])  # [b, m, d]
        logits = self.logits(F.linear(self.final_norm(x[:, m : m + length]), self.embed.weight))
        return logits, new_memory

    def forward(
        self, ids: torch.Tensor, memory_size: int | None = None, memory: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [b, n] read segment by segment -> (logits [b, n, vocab], the memory after the last segment).
        `memory` [b, m, d]: start from this memory instead of the initial one."""
        c = self.config
        if memory is None:
            memory = self.initial_memory(ids.shape[0], c.memory_size if memory_size is None else memory_size)
        outputs = []
        for s, start in enumerate(range(0, ids.shape[1], c.segment_length)):
            if s and (c.bptt_depth == 0 or (c.bptt_depth > 0 and s % c.bptt_depth == 0)):
                memory = memory.detach()
            with call_scope(segment=s):
                logits, memory = self.segment(memory, ids[:, start : start + c.segment_length])
            outputs.append(logits)
        return torch.cat(outputs, dim=1), memory

    def segment_roles(self, ids: torch.Tensor, memory_size: int) -> list[list[list[str]]]:
        """Per segment, per example: a role for every position of "seg"."""
        c = self.config
        special = {c.bos_id, c.eos_id}
        segments = []
        for start in range(0, ids.shape[1], c.segment_length):
            rows = ids[:, start : start + c.segment_length].tolist()
            segments.append(
                [
                    ["read_mem"] * memory_size
                    + ["pad" if i == c.pad_id else "special" if i in special else "tok" for i in row]
                    + ["write_mem"] * memory_size
                    for row in rows
                ]
            )
        return segments
