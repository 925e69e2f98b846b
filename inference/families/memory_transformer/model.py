"""The Memory Transformer family (Burtsev et al., paper 000): an
encoder-decoder translation Transformer (post-LN, as the paper's backbone)
whose encoder input is prefixed with m learned [mem] vectors.

Variants, chosen by `MemoryTransformerConfig.variant`:

- transformer:         the baseline; no memory.
- memtransformer:      [mem; seq] processed by ordinary encoder layers.
- memctrl:             memory positions are updated by their own attention +
                       FF sub-layer (the memory controller) over mem+seq;
                       sequence positions by the ordinary sub-layer over mem+seq.
- memctrl_shared:      as memctrl, one controller shared by all encoder layers.
- membottleneck:       memory attends to mem+seq and is updated first; then the
                       sequence attends only to the updated memory.
- membottleneck_skip:  as membottleneck but sequence positions are never
                       updated: encoder output = [memory states; sequence
                       embeddings].

The decoder is the baseline decoder; it cross-attends to [H_mem; H_seq].

Open choices of the paper, decided here:

- Memory vectors enter unscaled and carry no positional encoding: the
  learned vectors are distinct already, and sequence positions start at 0
  whatever the memory size, so a memory-size lesion never shifts the
  sequence's positions.
- Memory is initialised N(0, 1) per coordinate, the scale of a token
  embedding after its x sqrt(d) factor.
- Memory larger than trained (a lesion) cycles the trained vectors: slot j
  uses trained vector j mod m. Nothing untrained enters the model; extra
  slots are copies that the network has learned to process.
- Source, target and output embeddings share one matrix (one BPE
  vocabulary for both languages).

Layout convention: on the encoder axis ("enc") memory is a prefix, slots
0..m-1, followed by the source tokens. Analyses read positions by role, not
by this convention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.hooks import HookPoint, name_hook_points
from inference.layers import (
    AttentionFeedForward,
    DecoderLayer,
    EncoderLayer,
    EncoderOutput,
    LayerStack,
    TokenEmbedding,
    tie_parameters,
)

FAMILY_NAME = "memory_transformer"
VARIANTS = ("transformer", "memtransformer", "memctrl", "memctrl_shared", "membottleneck", "membottleneck_skip")


@dataclass
class MemoryTransformerConfig:
    family: str = FAMILY_NAME
    variant: str = "memtransformer"  # one of VARIANTS
    vocab_size: int = 8000
    d_model: int = 128  # paper's small config
    d_ff: int = 512
    n_heads: int = 8
    n_encoder_layers: int = 4
    n_decoder_layers: int = 4
    memory_size: int = 10  # trained number of [mem] slots; 0 for the baseline
    dropout: float = 0.1
    max_positions: int = 512  # per axis (source tokens, target tokens)
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self):
        if self.family != FAMILY_NAME:
            raise ValueError(f"MemoryTransformerConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}; expected one of {', '.join(VARIANTS)}")
        if self.variant == "transformer" and self.memory_size != 0:
            raise ValueError("the baseline transformer has memory_size 0")
        if self.variant != "transformer" and self.memory_size < 1:
            raise ValueError(f"variant {self.variant} needs memory_size >= 1")

    @property
    def max_memory_size(self) -> int:
        """Largest memory a lesion may ask for: three times the trained size."""
        return 3 * self.memory_size


class MemoryControllerLayer(nn.Module):
    """MemCtrl and MemBottleneck layers. Memory is updated first by its own
    sub-layers (`mem`: attention + FF) over mem+seq; then the sequence by
    `seq` over mem+seq (MemCtrl), over the updated memory only
    (MemBottleneck), or not at all (MemBottleneck Skip has no `seq`)."""

    def __init__(self, c: MemoryTransformerConfig):
        super().__init__()
        self.bottleneck = c.variant.startswith("membottleneck")
        self.mem = AttentionFeedForward(c.d_model, c.n_heads, c.d_ff, c.dropout, ("enc.mem", "enc"))
        if c.variant != "membottleneck_skip":
            self.seq = AttentionFeedForward(c.d_model, c.n_heads, c.d_ff, c.dropout, ("enc.seq", "enc"))

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor, m: int) -> torch.Tensor:  # [b, m+n, d]
        x_mem, x_seq = x[:, :m], x[:, m:]  # [b, m, d], [b, n, d]
        keys = key_mask[:, None, None, :]  # [b, 1, 1, m+n]
        h_mem = self.mem(x_mem, x, keys.expand(-1, -1, m, -1))
        if not hasattr(self, "seq"):
            return torch.cat([h_mem, x_seq], dim=1)
        if self.bottleneck:
            # Sequence queries see the updated memory only: sequence keys masked.
            kv = torch.cat([h_mem, x_seq], dim=1)
            keys = keys.clone()
            keys[..., m:] = False
        else:
            kv = x
        h_seq = self.seq(x_seq, kv, keys.expand(-1, -1, x_seq.shape[1], -1))
        return torch.cat([h_mem, h_seq], dim=1)


class MemoryTransformer(nn.Module):
    def __init__(self, config: MemoryTransformerConfig):
        super().__init__()
        c = self.config = config
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, c.max_positions, c.dropout, c.pad_id)
        self.memory = nn.Parameter(torch.randn(c.memory_size, c.d_model))  # [m, d]
        self.memory_in = HookPoint("batch slot d_model", "memory vectors entering the encoder")
        self.encoder = LayerStack()
        layers: list[nn.Module]
        if c.variant in ("transformer", "memtransformer"):
            layers = [EncoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout) for _ in range(c.n_encoder_layers)]
        else:
            controllers = [MemoryControllerLayer(c) for _ in range(c.n_encoder_layers)]
            if c.variant == "memctrl_shared":
                shared = controllers[0].mem
                for controller in controllers[1:]:
                    tie_parameters(controller.mem, shared)
            layers = list(controllers)
        self.encoder.layers = nn.ModuleList(layers)
        self.encoder.out = HookPoint("batch position d_model", "encoder output [H_mem; H_seq]", {"position": "enc"})
        self.decoder = LayerStack()
        self.decoder.layers = nn.ModuleList(
            DecoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout) for _ in range(c.n_decoder_layers)
        )
        self.decoder.out = HookPoint("batch position d_model", "final decoder states", {"position": "dec"})
        self.logits = HookPoint("batch position vocab", "output logits", {"position": "dec"})
        name_hook_points(self)

    def memory_vectors(self, memory_size: int) -> torch.Tensor:  # [memory_size, d]
        """Memory of any size: slot j is trained vector j mod m (see module doc)."""
        if memory_size == 0:
            return self.memory[:0]
        if self.config.memory_size == 0:
            raise ValueError("this model was trained without memory")
        index = torch.arange(memory_size, device=self.memory.device) % self.config.memory_size
        return self.memory[index]

    def encode(self, src_ids: torch.Tensor, memory_size: int | None = None) -> EncoderOutput:
        """src_ids [b, n] -> states over [mem; seq]."""
        m = self.config.memory_size if memory_size is None else memory_size
        b = src_ids.shape[0]
        x_mem = self.memory_in(self.memory_vectors(m).unsqueeze(0).expand(b, -1, -1))  # [b, m, d]
        return self.encode_embedded(x_mem, self.embed(src_ids), src_ids != self.config.pad_id)

    def encode_embedded(self, x_mem: torch.Tensor, x_seq: torch.Tensor, seq_key_mask: torch.Tensor) -> EncoderOutput:
        """The encoder from its input vectors: memory [b, m, d], embedded
        source [b, n, d] and its real positions [b, n]. Attribution methods
        differentiate with respect to these vectors."""
        b, m = x_mem.shape[:2]
        x = torch.cat([x_mem, x_seq], dim=1)  # [b, m+n, d]
        key_mask = torch.cat([torch.ones(b, m, dtype=torch.bool, device=x.device), seq_key_mask], dim=1)  # [b, m+n]
        for layer in self.encoder.layers:
            x = layer(x, key_mask, m)
        return EncoderOutput(self.encoder.out(x), key_mask, m)

    def decode(
        self,
        tgt_in: torch.Tensor,  # [b, t] decoder input tokens (from position `offset`)
        encoded: EncoderOutput,
        cache: list[dict] | None = None,
        tgt_key_mask: torch.Tensor | None = None,  # [b, offset+t] real target positions so far
    ) -> torch.Tensor:  # [b, t, vocab]
        offset = 0 if not cache or "k" not in cache[0].get("self", {}) else cache[0]["self"]["k"].shape[2]
        t = tgt_in.shape[1]
        if tgt_key_mask is None:
            tgt_key_mask = tgt_in != self.config.pad_id
        causal = torch.ones(t, offset + t, dtype=torch.bool, device=tgt_in.device).tril(
            diagonal=offset
        )  # [t, offset+t]
        self_mask = causal[None, None] & tgt_key_mask[:, None, None, :]  # [b, 1, t, offset+t]
        cross_mask = encoded.key_mask[:, None, None, :].expand(-1, -1, t, -1)  # [b, 1, t, m+n]
        y = self.embed(tgt_in, offset)  # [b, t, d]
        for i, layer in enumerate(self.decoder.layers):
            y = layer(y, self_mask, encoded.states, cross_mask, cache[i] if cache is not None else None)
        y = self.decoder.out(y)
        return self.logits(F.linear(y, self.embed.weight))  # tied output embedding

    def forward(self, src_ids: torch.Tensor, tgt_in: torch.Tensor, memory_size: int | None = None) -> torch.Tensor:
        """Teacher-forced logits [b, t, vocab] for decoder inputs tgt_in [b, t]."""
        return self.decode(tgt_in, self.encode(src_ids, memory_size))

    def new_cache(self) -> list[dict]:
        return [{} for _ in self.decoder.layers]
