"""Segment-level recurrent decoders of paper 002 (Bulatov, Kuratov & Burtsev):
one decoder-only Transformer with relative positional attention that reads
a long input segment by segment and carries something from one segment to
the next. What it carries is the variant, set by the config:

- Recurrent Memory Transformer (`memory_size` m > 0): each segment's input
  is [read memory ; segment tokens ; write memory], the same m vectors at
  both ends; the write block's output of the last layer becomes the next
  segment's memory.
- Transformer-XL (`cache_length` > 0): every layer also attends to its own
  inputs at the last `cache_length` earlier positions, detached.
- No memory (both 0): each segment alone.
- Full attention: one segment as long as the input (`segment_length` set to
  the input's length; same weights, `with_segment_length`).

The attention mask in a segment (the paper's, as in its public code), keys
being [cache ; read ; tokens ; write]:

- read rows: the whole read block;
- sequence rows: the cache, the read block, and the segment causally; never the write block;
- write rows: everything before them and the whole write block.

Positions: the block's positions follow the cache's, so a distance is the
same whether the earlier tokens sit in the cache or in the block; this is
what makes Transformer-XL with a cache covering the input equal to one
full-attention pass. Tokens carry no absolute position.

Backpropagation through time (`bptt_depth`): 0 detaches the memory at every
segment boundary; k > 0 lets gradients flow through k handoffs, cutting the
graph at every (k+1)-th boundary; -1 never cuts it. The cache is always detached.
Memory of another size at inference (a lesion) cycles the trained initial
vectors: slot j starts as vector j mod m.

Hook points, called once per segment (call index `segment`); queries on the
axis "seg" (read_mem, segment tokens, write_mem), keys on "ctx" (cached
tokens, then "seg"):

    memory.read                        [batch slot d_model]  memory entering the segment (m > 0)
    layers.{i}.cache                   [batch position d_model]  cached inputs (cache_length > 0, after segment 0)
    layers.{i}.attn.{mask,pattern,z}   attention of "seg" over "ctx"
    layers.{i}.resid_mid, layers.{i}.ff.{keys,out}
    memory.write                       [batch slot d_model]  memory leaving the segment (next segment's read)
    logits                             [batch position vocab]  per segment, for its token positions
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.capabilities import check_positions_and_special_ids
from inference.core.hooks import HookPoint, call_scope, name_hook_points
from inference.core.segment_memory import KEY_AXIS, QUERY_AXIS, handed_on, memory_tokens_text
from inference.families.recurrent_memory.attention import RelativeLayer

FAMILY_NAME = "recurrent_memory"


@dataclass
class RecurrentMemoryConfig:
    family: str = FAMILY_NAME
    vocab_size: int = 64
    d_model: int = 64
    d_ff: int = 256
    n_heads: int = 4
    n_layers: int = 2
    dropout: float = 0.0
    segment_length: int = 24  # tokens per segment
    memory_size: int = 6  # m memory tokens, read and written (RMT); 0 for none
    cache_length: int = 0  # cached earlier positions per layer (Transformer-XL's mem_len); 0 for none
    bptt_depth: int = 0  # memory handoffs gradients flow through: 0 detach, -1 all
    max_positions: int = 4096  # tokens of a whole input, all segments
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self):
        if self.family != FAMILY_NAME:
            raise ValueError(f"RecurrentMemoryConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        if self.memory_size < 0 or self.cache_length < 0 or self.segment_length < 1:
            raise ValueError("memory_size and cache_length must be at least 0, segment_length at least 1")
        if self.bptt_depth < -1:
            raise ValueError(f"bptt_depth is -1 (all), 0 (detach) or a number of segments, got {self.bptt_depth}")
        if self.d_model % 2 or self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} must be even and divisible by n_heads {self.n_heads}")
        check_positions_and_special_ids(self)

    @property
    def max_memory_size(self) -> int:
        """Largest memory a lesion may ask for: twice the trained size."""
        return 2 * self.memory_size

    @property
    def memory_setup(self) -> str:
        carried = [f"RMT, {memory_tokens_text(self.memory_size)}"] if self.memory_size else []
        carried += [f"Transformer-XL, cache {self.cache_length}"] if self.cache_length else []
        return " + ".join(carried) or "no memory"

    def with_segment_length(self, segment_length: int) -> RecurrentMemoryConfig:
        """The same model reading segments of another length (full attention: the input's)."""
        return replace(self, segment_length=segment_length)


def segment_mask(m: int, real: torch.Tensor, cached: int = 0) -> torch.Tensor:
    """Who may attend whom in one segment (module doc): real [b, L] marks
    non-pad tokens -> [b, 1, m+L+m, cached+m+L+m] bool."""
    b, length = real.shape
    n = m + length + m
    mask = torch.zeros(n, cached + n, dtype=torch.bool, device=real.device)
    read, tokens, write = slice(0, m), slice(m, m + length), slice(m + length, n)
    block = mask[:, cached:]  # a view: the keys of this segment's block
    block[read, read] = True
    mask[tokens, : cached + m] = True
    block[tokens, tokens] = torch.ones(length, length, dtype=torch.bool, device=real.device).tril()
    mask[write] = True
    keys = torch.cat([real.new_ones(b, cached + m), real, real.new_ones(b, m)], dim=1)  # [b, cached+n]
    return mask[None, None] & keys[:, None, None, :]


def segment_distances(n: int, cached: int, device: torch.device) -> torch.Tensor:  # [n, cached+n]
    """Query position minus key position; the block follows the cache."""
    return cached + torch.arange(n, device=device)[:, None] - torch.arange(cached + n, device=device)[None, :]


class RecurrentMemoryHookPoints(nn.Module):
    """`memory`: the hook points on the memory entering and leaving a segment, set by the model's __init__."""

    read: HookPoint
    write: HookPoint


class RecurrentMemoryTransformer(nn.Module):
    def __init__(self, config: RecurrentMemoryConfig):
        super().__init__()
        c = self.config = config
        self.embed = nn.Parameter(torch.randn(c.vocab_size, c.d_model) * c.d_model**-0.5)  # tied with the output
        self.memory_init = nn.Parameter(torch.randn(max(c.memory_size, 1), c.d_model))  # [m, d] initial memory
        self.memory = RecurrentMemoryHookPoints()
        self.memory.read = HookPoint("batch slot d_model", "memory entering a segment")
        self.layers = nn.ModuleList(
            RelativeLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, (QUERY_AXIS, KEY_AXIS)) for _ in range(c.n_layers)
        )
        self.memory.write = HookPoint("batch slot d_model", "memory leaving a segment: the write block's output")
        self.final_norm = nn.LayerNorm(c.d_model)
        self.logits = HookPoint("batch position vocab", "next-token logits of a segment's tokens")
        name_hook_points(self)

    def initial_memory(self, batch: int, memory_size: int) -> torch.Tensor:  # [b, m, d]
        index = torch.arange(memory_size, device=self.memory_init.device) % self.memory_init.shape[0]
        return self.memory_init[index].unsqueeze(0).expand(batch, -1, -1)

    def segment(
        self, memory: torch.Tensor, ids: torch.Tensor, cache: list[torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        """One segment: memory [b, m, d], ids [b, L], cache per layer [b, c, d]
        -> (logits [b, L, vocab], new memory [b, m, d], new cache per layer)."""
        m, length, cached = memory.shape[1], ids.shape[1], cache[0].shape[1]
        if m:
            memory = self.memory.read(memory)
        tokens = F.embedding(ids, self.embed) * math.sqrt(self.config.d_model)  # [b, L, d]
        x = torch.cat([memory, tokens, memory], dim=1)  # [b, m+L+m, d]
        mask = segment_mask(m, ids != self.config.pad_id, cached)  # [b, 1, m+L+m, c+m+L+m]
        distance = segment_distances(x.shape[1], cached, x.device)
        keep = self.config.cache_length
        new_cache = []
        for layer, layer_cache in zip(self.layers, cache):
            if keep:  # this layer's inputs at the last `keep` token positions, for the next segment
                new_cache.append(torch.cat([layer_cache, x[:, m : m + length]], dim=1)[:, -keep:].detach())
            x = layer(x, layer_cache, mask, distance)
        if m:
            memory = self.memory.write(x[:, m + length :])  # [b, m, d]
        logits = self.logits(F.linear(self.final_norm(x[:, m : m + length]), self.embed))
        return logits, memory, new_cache if keep else cache

    def forward(
        self, ids: torch.Tensor, memory_size: int | None = None, memory: torch.Tensor | None = None
    ) -> torch.Tensor:
        """ids [b, n] read segment by segment -> next-token logits [b, n, vocab] (`read`'s first half)."""
        return self.read(ids, memory_size, memory)[0]

    def read(
        self, ids: torch.Tensor, memory_size: int | None = None, memory: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [b, n] read segment by segment -> (logits [b, n, vocab], the memory after the last segment [b, m, d]).
        `memory` [b, m, d]: start from this memory instead of the initial one."""
        c = self.config
        if memory is None:
            memory = self.initial_memory(ids.shape[0], c.memory_size if memory_size is None else memory_size)
        cache = [ids.new_zeros(ids.shape[0], 0, c.d_model, dtype=self.embed.dtype)] * c.n_layers
        outputs = []
        for s, start in enumerate(self.segment_starts(ids.shape[1])):
            if s:
                memory = handed_on(memory, s, c.bptt_depth)
            with call_scope(segment=s):
                logits, memory, cache = self.segment(memory, ids[:, start : start + c.segment_length], cache)
            outputs.append(logits)
        return torch.cat(outputs, dim=1), memory

    def segment_starts(self, length: int) -> range:
        return range(0, length, self.config.segment_length)

    def cached_length(self, segment: int) -> int:
        """Positions in the cache when `segment` is read."""
        return min(segment * self.config.segment_length, self.config.cache_length)
