"""Building blocks shared by the model families: attention, feed-forward,
post-LN and pre-LN layer bodies, the post-LN encoder and decoder layers of
the translation models, embeddings. Every quantity worth seeing passes
through a HookPoint declared here with its axes."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.hooks import HookPoint

# Per-layer decoding cache: {"k": [b, h, t, d_head], "v": [b, h, t, d_head]}.
LayerCache = dict[str, torch.Tensor]


class AttentionProjections(nn.Module):
    """The projections and hook points (mask, pattern, z) of multi-head attention, without a forward: a subclass
    says how it attends (`MultiHeadAttention`; relative-position attention passes distances too)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, axes: tuple[str, str]):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        query, key = axes
        tokens = {"query": query, "key": key}
        self.mask = HookPoint("batch head query key", "bool, True where the query may attend the key (head: 1)", tokens)
        self.pattern = HookPoint("batch head query key", "attention weights", tokens, {"head": n_heads})
        self.z = HookPoint(
            "batch head query d_head",
            "per-head outputs before the output projection",
            {"query": query},
            {"head": n_heads},
        )

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.d_head).transpose(1, 2)  # [b, h, t, d_head]


def keyless_rows(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(a mask in which every query row sees a key, the rows [b, 1, q, 1] that saw one in `mask` [b, 1, q, k]; None
    where all did): a row without a visible key attends everything, then is zeroed by its caller, so it gets zero
    weight and zero output instead of a softmax over nothing (NaN, which spreads to every position through the
    values)."""
    visible = mask.any(dim=-1, keepdim=True)  # [b, 1, q, 1]
    if bool(visible.all()):
        return mask, None
    return mask | ~visible, visible


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # [b, h, q, k] -> [b, h, q, k]
    """Attention weights over the visible keys of `mask` [b, 1, q, k]; all zero in a row without one
    (`keyless_rows`). Overwrites `scores`."""
    safe_mask, visible = keyless_rows(mask)
    weights = scores.masked_fill_(~safe_mask, float("-inf")).softmax(dim=-1)
    return weights if visible is None else weights * visible


class MultiHeadAttention(AttentionProjections):
    """Multi-head attention with hook points for mask, pattern and head outputs.

    The fast path uses PyTorch's fused scaled_dot_product_attention. When the
    pattern hook is active (a capture or an edit is registered) the weights
    are computed explicitly so they can be recorded; both paths give the
    same outputs to float precision.

    A query row with no visible key (e.g. all memory keys blocked in a
    bottleneck layer) gets zero attention weight and zero output, so the
    sub-layer leaves that position to its residual.
    """

    def forward(
        self,
        query: torch.Tensor,  # [b, q, d]
        key_value: torch.Tensor,  # [b, k, d]
        mask: torch.Tensor,  # [b, 1, q, k] bool
        cache: LayerCache | None = None,
        static_kv: bool = False,
    ) -> torch.Tensor:  # [b, q, d]
        q = self._split_heads(self.q_proj(query))  # [b, h, q, d_head]
        if cache is not None and static_kv and "k" in cache:
            k, v = cache["k"], cache["v"]
        else:
            k = self._split_heads(self.k_proj(key_value))  # [b, h, k_new, d_head]
            v = self._split_heads(self.v_proj(key_value))
            if cache is not None and not static_kv and "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)  # [b, h, k, d_head]
                v = torch.cat([cache["v"], v], dim=2)
        if cache is not None:
            cache["k"], cache["v"] = k, v

        mask = self.mask(mask)
        dropout_p = self.dropout if self.training else 0.0
        if self.pattern.active:
            scores = (q / math.sqrt(self.d_head)) @ k.transpose(-2, -1)  # [b, h, q, k]
            weights = self.pattern(masked_softmax(scores, mask))
            z = F.dropout(weights, dropout_p, self.training) @ v  # [b, h, q, d_head]
        else:
            safe_mask, visible = keyless_rows(mask)
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=safe_mask, dropout_p=dropout_p)
            z = z if visible is None else z * visible
        z = self.z(z)
        b, h, t, d_head = z.shape
        return self.out_proj(z.transpose(1, 2).reshape(b, t, h * d_head))


class FeedForward(nn.Module):
    """Position-wise ReLU feed-forward layer, read as a key-value memory:
    rows of w_in are keys, columns of w_out are values, and the activations
    after the ReLU are the key coefficients m_i."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, axis: str):
        super().__init__()
        self.w_in = nn.Linear(d_model, d_ff)
        self.w_out = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        tokens = {"position": axis}
        self.keys = HookPoint("batch position ff_key", "key coefficients after the ReLU", tokens, {"ff_key": d_ff})
        self.out = HookPoint("batch position d_model", "feed-forward output", tokens)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [b, t, d] -> [b, t, d]
        coefficients = self.keys(F.relu(self.w_in(x)))  # [b, t, d_ff]
        return self.out(self.w_out(self.dropout(coefficients)))


def add_and_norm(norm: nn.LayerNorm, dropout: nn.Dropout, x: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
    """Post-LN residual step of the paper's backbone: LN(x + Dropout(update))."""
    return norm(x + dropout(update))


class PostNormSublayers(nn.Module):
    """The sub-layers of one post-LN Transformer layer body (attention, then FF) and their pass; the layers below
    say what they take.

    Hook names below it: attn.{mask,pattern,z}, resid_mid, ff.{keys,out}.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, axes: tuple[str, str]):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, n_heads, dropout, axes)
        self.attn_norm = nn.LayerNorm(d_model)
        self.resid_mid = HookPoint(
            "batch position d_model", "residual stream entering the feed-forward layer", {"position": axes[0]}
        )
        self.ff = FeedForward(d_model, d_ff, dropout, axes[0])
        self.ff_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def attend_and_feed(
        self, x: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:  # x [b, q, d] -> [b, q, d]
        x = self.resid_mid(add_and_norm(self.attn_norm, self.dropout, x, self.attn(x, kv, mask)))
        return add_and_norm(self.ff_norm, self.dropout, x, self.ff(x))


class AttentionFeedForward(PostNormSublayers):
    """One post-LN Transformer layer body: attention of x over kv, then FF.

    Hook names below it: attn.{mask,pattern,z}, resid_mid, ff.{keys,out}.
    """

    def forward(
        self, x: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:  # x [b, q, d] -> [b, q, d]
        return self.attend_and_feed(x, kv, mask)


class PreNormAttentionFeedForward(nn.Module):
    """One pre-LN Transformer layer body (GPT-2; Baevski & Auli's language
    model, the one Geva et al. analyse): x + Attn(LN(x)), then + FF(LN(.)).

    The residual stream is a plain sum of the sub-layers' outputs, so the
    stream entering the FF layer (`resid_mid`), the FF output (`ff.out`) and
    the layer output (their sum, dropout off) add up exactly. The FF keys
    read LN(resid_mid). Hook names below it are AttentionFeedForward's:
    attn.{mask,pattern,z}, resid_mid, ff.{keys,out}.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, axes: tuple[str, str]):
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout, axes)
        self.resid_mid = HookPoint(
            "batch position d_model",
            "residual stream entering the feed-forward sub-layer (before its LayerNorm)",
            {"position": axes[0]},
        )
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout, axes[0])
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:  # x [b, t, d], mask [b, 1, t, t] -> [b, t, d]
        h = self.attn_norm(x)
        x = self.resid_mid(x + self.dropout(self.attn(h, h, mask)))
        return x + self.dropout(self.ff(self.ff_norm(x)))


@dataclass
class EncoderOutput:
    states: torch.Tensor  # [b, m+n, d]  memory states (if any) then sequence states
    key_mask: torch.Tensor  # [b, m+n] bool, True for real (non-pad) positions
    memory_size: int  # m, the memory positions in front; 0 for none


class EncoderLayer(PostNormSublayers):
    """Ordinary post-LN encoder layer over the "enc" axis (memory slots, if any, included)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float):
        super().__init__(d_model, n_heads, d_ff, dropout, ("enc", "enc"))

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor, m: int) -> torch.Tensor:  # [b, m+n, d]
        mask = key_mask[:, None, None, :].expand(-1, -1, x.shape[1], -1)  # [b, 1, m+n, m+n]
        return self.attend_and_feed(x, x, mask)


class DecoderLayer(nn.Module):
    """Post-LN decoder layer of the translation models: causal
    self-attention, cross-attention to the encoder states, feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, ("dec", "dec"))
        self.self_attn_norm = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, ("dec", "enc"))
        self.cross_attn_norm = nn.LayerNorm(d_model)
        self.resid_mid = HookPoint(
            "batch position d_model", "residual stream entering the feed-forward layer", {"position": "dec"}
        )
        self.ff = FeedForward(d_model, d_ff, dropout, "dec")
        self.ff_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        y: torch.Tensor,  # [b, t, d]
        self_mask: torch.Tensor,  # [b, 1, t, offset+t]
        memory: torch.Tensor,  # [b, m+n, d]
        cross_mask: torch.Tensor,  # [b, 1, t, m+n]
        cache: dict[str, LayerCache] | None = None,
    ) -> torch.Tensor:
        self_cache = cache.setdefault("self", {}) if cache is not None else None
        cross_cache = cache.setdefault("cross", {}) if cache is not None else None
        y = add_and_norm(self.self_attn_norm, self.dropout, y, self.self_attn(y, y, self_mask, self_cache))
        y = add_and_norm(
            self.cross_attn_norm, self.dropout, y, self.cross_attn(y, memory, cross_mask, cross_cache, static_kv=True)
        )
        y = self.resid_mid(y)
        return add_and_norm(self.ff_norm, self.dropout, y, self.ff(y))


class LayerStack(nn.Module):
    """A model's encoder or decoder: its layers (`layers.{i}`) and the hook on its output (`out`), set by the
    model's __init__ (which may give it more hook points)."""

    layers: nn.ModuleList
    out: HookPoint


def sinusoid(positions: torch.Tensor, d_model: int) -> torch.Tensor:  # [n] (any sign) -> [n, d]
    """Sine and cosine of each position at d/2 geometric rates, interleaved."""
    rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    angle = positions.to(torch.float32).unsqueeze(1) * rate.to(positions.device)  # [n, d/2]
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


def sinusoidal_positions(n_positions: int, d_model: int) -> torch.Tensor:  # [n_positions, d]
    return sinusoid(torch.arange(n_positions), d_model)


class TokenEmbedding(nn.Module):
    """Token embedding x sqrt(d) plus sinusoidal positions, then dropout."""

    positions: torch.Tensor  # [max_positions, d], a buffer

    def __init__(self, vocab_size: int, d_model: int, max_positions: int, dropout: float, pad_id: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) * d_model**-0.5)
        self.scale = math.sqrt(d_model)
        self.pad_id = pad_id
        self.register_buffer("positions", sinusoidal_positions(max_positions, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor, offset: int = 0) -> torch.Tensor:  # [b, t] -> [b, t, d]
        if offset + ids.shape[1] > self.positions.shape[0]:
            raise ValueError(
                f"sequence of {offset + ids.shape[1]} tokens exceeds max_positions {self.positions.shape[0]}"
            )
        x = F.embedding(ids, self.weight, padding_idx=self.pad_id) * self.scale
        return self.dropout(x + self.positions[offset : offset + ids.shape[1]])


def tie_parameters(target: nn.Module, source: nn.Module) -> None:
    """Make every parameter of `target` the very tensor of `source`.

    Used for shared sub-networks: each user keeps its own hook points (and so
    its own names), while the weights are one set.
    """
    for name, parameter in source.named_parameters():
        owner_path, _, attribute = name.rpartition(".")
        owner = target.get_submodule(owner_path) if owner_path else target
        setattr(owner, attribute, parameter)
