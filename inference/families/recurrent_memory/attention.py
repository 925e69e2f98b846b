"""Relative positional attention (Dai et al.'s Transformer-XL, used by paper
002's code for every model it compares) and the pre-LN layer around it.

The score of query i for key j is

    ((q_i + r_w) . k_j  +  (q_i + r_r) . W_r R(pos_i - pos_j)) / sqrt(d_head)

with R the sinusoid of the signed distance, W_r a learned projection and
r_w, r_r the two learned per-head biases. Transformer-XL computes the
second term for all distances and moves each row into place with a
"relative shift"; here the same move is an explicit gather of each pair's
distance, which also covers keys after the query (the read and write memory
blocks of RMT see each other in both directions).

Keys and values are [cache ; block]: the layer's inputs of earlier
segments' tokens (Transformer-XL's memory, detached by the model), then the
current block. Hook points are the other families' (attn.mask, attn.pattern,
attn.z, resid_mid, ff.keys, ff.out), plus `cache`, the cached states a
layer attends to.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.hooks import HookPoint
from inference.layers import AttentionProjections, FeedForward, masked_softmax, sinusoid


class RelativeAttention(AttentionProjections):
    """MultiHeadAttention's projections and hook points, plus W_r and the two biases."""

    def __init__(self, d_model: int, n_heads: int, dropout: float, axes: tuple[str, str]):
        super().__init__(d_model, n_heads, dropout, axes)
        self.r_proj = nn.Linear(d_model, d_model, bias=False)  # W_r
        self.r_w_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))  # content bias
        self.r_r_bias = nn.Parameter(torch.zeros(n_heads, self.d_head))  # position bias

    def forward(
        self,
        query: torch.Tensor,  # [b, q, d]
        context: torch.Tensor,  # [b, k, d]  cache then block
        mask: torch.Tensor,  # [b, 1, q, k] bool
        distance: torch.Tensor,  # [q, k] long: position of the query minus position of the key
    ) -> torch.Tensor:  # [b, q, d]
        q = self._split_heads(self.q_proj(query))  # [b, h, q, d_head]
        k = self._split_heads(self.k_proj(context))  # [b, h, k, d_head]
        v = self._split_heads(self.v_proj(context))
        nearest = int(distance.min())
        offsets = torch.arange(nearest, int(distance.max()) + 1, device=query.device)  # [n_dist]
        r = self.r_proj(sinusoid(offsets, query.shape[-1]).to(query.dtype))  # [n_dist, d]
        r = r.view(-1, self.n_heads, self.d_head).transpose(0, 1)  # [h, n_dist, d_head]
        content = (q + self.r_w_bias[:, None]) @ k.transpose(-2, -1)  # [b, h, q, k]
        by_distance = (q + self.r_r_bias[:, None]) @ r.transpose(-2, -1).unsqueeze(0)  # [b, h, q, n_dist]
        index = (distance - nearest).expand(*by_distance.shape[:2], -1, -1)  # [b, h, q, k]
        position = by_distance.gather(-1, index)  # [b, h, q, k]: the relative shift
        scores = (content + position) / math.sqrt(self.d_head)
        mask = self.mask(mask)
        weights = self.pattern(masked_softmax(scores, mask))  # [b, h, q, k]; a row with no visible key all zero
        z = self.z(F.dropout(weights, self.dropout, self.training) @ v)  # [b, h, q, d_head]
        b, h, t, d_head = z.shape
        return self.out_proj(z.transpose(1, 2).reshape(b, t, h * d_head))


class RelativeLayer(nn.Module):
    """Pre-LN layer: x + Attn(LN([cache ; x])), then + FF(LN(.)); the cache is
    this layer's input at earlier positions, normed with the block as
    Transformer-XL does."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, axes: tuple[str, str]):
        super().__init__()
        query, key = axes
        self.cache = HookPoint("batch position d_model", "cached layer inputs of earlier segments", {"position": key})
        self.attn_norm = nn.LayerNorm(d_model)
        self.attn = RelativeAttention(d_model, n_heads, dropout, axes)
        self.resid_mid = HookPoint(
            "batch position d_model",
            "residual stream entering the feed-forward sub-layer (before its LayerNorm)",
            {"position": query},
        )
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout, query)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,  # [b, t, d]
        cache: torch.Tensor,  # [b, c, d]
        mask: torch.Tensor,  # [b, 1, t, c+t]
        distance: torch.Tensor,  # [t, c+t]
    ) -> torch.Tensor:  # [b, t, d]
        if cache.shape[1]:
            cache = self.cache(cache)
        h = self.attn_norm(torch.cat([cache, x], dim=1))  # [b, c+t, d]
        x = self.resid_mid(x + self.dropout(self.attn(h[:, cache.shape[1] :], h, mask, distance)))
        return x + self.dropout(self.ff(self.ff_norm(x)))
