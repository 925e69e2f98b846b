"""The working-memory decoder (Sagirova & Burtsev, paper 004): a baseline
post-LN encoder-decoder Transformer whose decoder writes vocabulary tokens
into its own input stream as working memory, each flagged by a type bit.

The decoder stream interleaves memory tokens with target tokens, e.g.

    ids   = [BOS, y1, m1, y2, m2, m3, y3, EOS]
    types = [1,   1,  0,  1,  0,  0,  1,  1]      0 = memory, 1 = target

Every decoder position predicts the next element twice: a token (tied
vocabulary logits) and its type (a 2-way type head; together the paper's
"vocab + 2" output layer). Generation, the teacher-forced training step of
Algorithm 1 live in `generation.py` beside this module, the lesions in
`family.py`; this module is the network.

Open choices of the paper, decided here:

- Decoder input = token embedding x sqrt(d) + sinusoidal position of the
  element in the interleaved stream (memory and target tokens share one
  position count, as in the released code) + a learned type embedding;
  dropout is applied once to the sum. A memory-size lesion therefore shifts
  the positions of later target tokens: that is part of the lesion.
- BOS is a target-type element (type 1), the start type T_1 of Algorithm 1.
- The type head is a separate nn.Linear(d, 2) next to the tied vocabulary
  projection (source, target and output embeddings share one matrix, as in
  the Memory Transformer family). Index 0 = memory, 1 = target, the same
  coding as the type embedding.
- How the type head learns (the released code puts no loss on it) is
  decided in `generation.type_labels`: a self-supervised
  "write memory where the next target token is hard" rule, see there and
  docs/working_memory.md.
- The encoder and decoder layers are the shared post-LN `EncoderLayer` and
  `DecoderLayer` (inference/layers.py), the baseline Transformer's; no layer
  logic is repeated here.

Hook points (besides those of the reused layers):

    encoder.out          [batch position d_model]  encoder states (no memory on the encoder axis)
    decoder.wm.types     [batch key]               type of every decoder key position so far (long)
    decoder.out          [batch position d_model]  final decoder states
    decoder.wm.choice    [batch column]            a generation / build step's record as the type head
                                                   made it (CHOICE_COLUMNS); hooks may edit it
    decoder.wm.written   [batch column]            the step's record as written, after hooks and the cap
    logits               [batch position vocab]    token logits (tied output embedding)
    type_logits          [batch position type]     type logits: 0 memory, 1 target

Attention axes: encoder self-attention ("enc", "enc"), decoder
self-attention ("dec", "dec"), cross-attention ("dec", "enc"). On "dec",
the role of a position is "wm" for memory-type tokens (the family's trace).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.capabilities import check_positions_and_special_ids
from inference.core.hooks import HookPoint, name_hook_points
from inference.core.memory_decisions import CHOICE_COLUMNS
from inference.core.refusals import InputRefused
from inference.layers import DecoderLayer, EncoderLayer, EncoderOutput, LayerCache, LayerStack, TokenEmbedding

FAMILY_NAME = "working_memory"


@dataclass
class WorkingMemoryConfig:
    family: str = FAMILY_NAME
    vocab_size: int = 8000
    d_model: int = 128  # paper: 4 layers, d 128, d_ff 512, 8 heads
    d_ff: int = 512
    n_heads: int = 8
    n_encoder_layers: int = 4
    n_decoder_layers: int = 4
    dropout: float = 0.1
    max_positions: int = 512  # per axis: source tokens; decoder stream = BOS + memory + target tokens
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    memory_size: int = 10  # M: working-memory tokens the decoder may write per sentence
    top_p: float = 0.9  # nucleus sampling parameter for memory tokens

    def __post_init__(self):
        if self.family != FAMILY_NAME:
            raise ValueError(f"WorkingMemoryConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        if self.memory_size < 1:
            raise ValueError(f"memory_size must be >= 1, got {self.memory_size}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p}")
        if self.d_model % 2 or self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} must be even and divisible by n_heads {self.n_heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if min(self.vocab_size, self.d_ff, self.n_encoder_layers, self.n_decoder_layers) < 1:
            raise ValueError("vocab_size, d_ff and layer counts must be positive")
        check_positions_and_special_ids(self)

    @property
    def max_memory_size(self) -> int:
        """Largest memory a lesion may allow at inference: twice the trained size."""
        return 2 * self.memory_size


@dataclass
class WMCache:
    """Decoding cache: per-layer keys/values and the types of the positions
    cached so far (the memory-mask lesion needs the key types)."""

    layers: list[dict[str, LayerCache]]
    types: torch.Tensor | None = None  # [b, offset]
    key_mask: torch.Tensor | None = None  # [b, offset]

    @property
    def offset(self) -> int:
        return 0 if self.types is None else self.types.shape[1]


@dataclass
class WMOutput:
    token_logits: torch.Tensor  # [b, t, vocab]
    type_logits: torch.Tensor  # [b, t, 2]
    extras: dict = field(default_factory=dict)


class WorkingMemoryHookPoints(nn.Module):
    """`decoder.wm`: the hook points of the working memory, set by the model's __init__."""

    types: HookPoint
    choice: HookPoint
    written: HookPoint


class WorkingMemoryDecoder(LayerStack):
    """The decoder stack, with the working memory's hook points under `wm`."""

    wm: WorkingMemoryHookPoints


class WorkingMemoryTransformer(nn.Module):
    def __init__(self, config: WorkingMemoryConfig):
        super().__init__()
        c = self.config = config
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, c.max_positions, c.dropout, c.pad_id)  # shared, tied
        self.type_embed = nn.Embedding(2, c.d_model)  # [2, d]: 0 memory, 1 target
        # Zero at the start, so a model whose other weights come from a plain
        # Transformer (the warm-up of Algorithm 1) begins as exactly that Transformer.
        nn.init.zeros_(self.type_embed.weight)
        self.encoder = LayerStack()
        sizes = (c.d_model, c.n_heads, c.d_ff, c.dropout)
        self.encoder.layers = nn.ModuleList(EncoderLayer(*sizes) for _ in range(c.n_encoder_layers))
        self.encoder.out = HookPoint("batch position d_model", "encoder output", {"position": "enc"})
        self.decoder = WorkingMemoryDecoder()
        self.decoder.wm = WorkingMemoryHookPoints()
        self.decoder.wm.types = HookPoint(
            "batch key", "type of every decoder key position so far: 0 memory, 1 target (long)", {"key": "dec"}
        )
        self.decoder.layers = nn.ModuleList(DecoderLayer(*sizes) for _ in range(c.n_decoder_layers))
        self.decoder.out = HookPoint("batch position d_model", "final decoder states", {"position": "dec"})
        columns = ", ".join(CHOICE_COLUMNS)
        self.decoder.wm.choice = HookPoint("batch column", f"a step's choice as the type head made it: {columns}")
        self.decoder.wm.written = HookPoint(
            "batch column", f"the step's choice as written, after hooks and cap: {columns}"
        )
        self.type_head = nn.Linear(c.d_model, 2)
        self.logits = HookPoint("batch position vocab", "token logits", {"position": "dec"})
        self.type_logits = HookPoint("batch position type", "type logits: 0 memory, 1 target", {"position": "dec"})
        name_hook_points(self)

    def encode(self, src_ids: torch.Tensor) -> EncoderOutput:
        """src_ids [b, n] -> encoder states [b, n, d] (memory_size 0 on this axis)."""
        key_mask = src_ids != self.config.pad_id  # [b, n]
        x = self.embed(src_ids)  # [b, n, d]
        for layer in self.encoder.layers:
            x = layer(x, key_mask, 0)
        return EncoderOutput(self.encoder.out(x), key_mask, 0)

    def embed_stream(
        self, ids: torch.Tensor, types: torch.Tensor, offset: int = 0
    ) -> torch.Tensor:  # [b, t] -> [b, t, d]
        """Token x sqrt(d) + stream position + type embedding, then dropout."""
        e = self.embed
        t = ids.shape[1]
        if offset + t > e.positions.shape[0]:
            raise InputRefused(f"decoder stream of {offset + t} elements exceeds max_positions {e.positions.shape[0]}")
        x = (
            F.embedding(ids, e.weight, padding_idx=e.pad_id) * e.scale
            + e.positions[offset : offset + t]
            + self.type_embed(types)
        )
        return e.dropout(x)

    def decode(
        self,
        ids: torch.Tensor,  # [b, t] stream elements from position `cache.offset`
        types: torch.Tensor,  # [b, t] their types (0 memory, 1 target)
        encoded: EncoderOutput,
        cache: WMCache | None = None,
        key_mask: torch.Tensor | None = None,  # [b, t] real (non-pad) elements among the new ones; default all
    ) -> tuple[torch.Tensor, torch.Tensor]:  # token logits [b, t, vocab], type logits [b, t, 2]
        offset = cache.offset if cache is not None else 0
        b, t = ids.shape
        if key_mask is None:
            key_mask = torch.ones(b, t, dtype=torch.bool, device=ids.device)
        all_types, all_keys = types, key_mask
        if cache is not None:
            if cache.types is not None and cache.key_mask is not None:  # set together, by the step before
                all_types = torch.cat([cache.types, types], dim=1)  # [b, offset+t]
                all_keys = torch.cat([cache.key_mask, key_mask], dim=1)
            cache.types, cache.key_mask = all_types, all_keys
        self.decoder.wm.types(all_types)  # lesions read the stream's types here
        causal = torch.ones(t, offset + t, dtype=torch.bool, device=ids.device).tril(diagonal=offset)  # [t, offset+t]
        self_mask = causal[None, None] & all_keys[:, None, None, :]  # [b, 1, t, offset+t]
        cross_mask = encoded.key_mask[:, None, None, :].expand(-1, -1, t, -1)  # [b, 1, t, n]
        y = self.embed_stream(ids, types, offset)  # [b, t, d]
        for i, layer in enumerate(self.decoder.layers):
            y = layer(y, self_mask, encoded.states, cross_mask, cache.layers[i] if cache is not None else None)
        y = self.decoder.out(y)
        token_logits = self.logits(F.linear(y, self.embed.weight))  # tied output embedding
        return token_logits, self.type_logits(self.type_head(y))

    def forward(
        self, src_ids: torch.Tensor, ids: torch.Tensor, types: torch.Tensor, key_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced (token logits [b, t, vocab], type logits [b, t, 2])
        over a given interleaved stream ids/types [b, t]."""
        return self.decode(ids, types, self.encode(src_ids), key_mask=key_mask)

    def new_cache(self) -> WMCache:
        return WMCache([{} for _ in self.decoder.layers])
