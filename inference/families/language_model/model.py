"""A decoder-only language model with ReLU feed-forward layers: the kind of
model Geva et al. (paper 003) read as key-value memories, trained here on
English Wikipedia (training/loop/lm_run.py).

Choices, and why:

- Pre-LN layers (`PreNormAttentionFeedForward`) plus a final LayerNorm,
  as in the paper's model (Baevski & Auli's adaptive-input Transformer LM,
  pre-LN) and GPT-2. The FF-memory analyses read the residual stream: in a
  pre-LN model it is a plain sum, so the residual entering an FF layer
  (`layers.{i}.resid_mid`), the FF output (`layers.{i}.ff.out`) and the layer
  output (their sum) compare directly, and the logit lens of any stream
  vector h is final_norm(h) · E^T, as for the last layer. (The translation
  models are post-LN, as their paper's backbone.) Pre-LN also trains stably
  without a carefully tuned warm-up.
- ReLU FF, so key coefficients m_i = ReLU(LN(x) · k_i) are >= 0 and a key is
  either active or not (`layers.{i}.ff.keys`, the paper's m_i).
- Token embedding x sqrt(d) + sinusoidal positions (`TokenEmbedding`, the
  paper's model also uses sinusoids); the output embedding is tied to it.
- Causal self-attention over one axis, "tok"; padding keys are masked too,
  so right-padded batches of sentences (trigger mining) score each
  sentence as if alone.

Hook points, per layer i:

    layers.{i}.attn.{mask,pattern,z}  [batch head query key] / [batch head query d_head], over "tok"
    layers.{i}.resid_mid              [batch position d_model]  residual stream entering the FF sub-layer
    layers.{i}.ff.keys                [batch position ff_key]   key coefficients m_i after the ReLU
    layers.{i}.ff.out                 [batch position d_model]  FF output, added to resid_mid
    out                               [batch position d_model]  final LayerNorm output: what E reads
    logits                            [batch position vocab]    next-token logits
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.capabilities import NoMemory, check_positions_and_special_ids
from inference.core.hooks import HookPoint, name_hook_points
from inference.layers import PreNormAttentionFeedForward, TokenEmbedding

FAMILY_NAME = "language_model"
AXIS = "tok"


@dataclass
class LanguageModelConfig(NoMemory):
    family: str = FAMILY_NAME
    vocab_size: int = 8000
    d_model: int = 256
    d_ff: int = 1024  # number of FF keys (memories) per layer
    n_heads: int = 8
    n_layers: int = 6
    dropout: float = 0.1
    max_positions: int = 256  # context window in tokens
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2  # also separates documents in the training stream

    def __post_init__(self):
        if self.family != FAMILY_NAME:
            raise ValueError(f"LanguageModelConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        if self.d_model % 2 or self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} must be even and divisible by n_heads {self.n_heads}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if min(self.vocab_size, self.d_ff, self.n_layers) < 1:
            raise ValueError("vocab_size, d_ff and n_layers must be positive")
        check_positions_and_special_ids(self)


class LanguageModel(nn.Module):
    def __init__(self, config: LanguageModelConfig):
        super().__init__()
        c = self.config = config
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, c.max_positions, c.dropout, c.pad_id)
        self.layers = nn.ModuleList(
            PreNormAttentionFeedForward(c.d_model, c.n_heads, c.d_ff, c.dropout, (AXIS, AXIS))
            for _ in range(c.n_layers)
        )
        self.final_norm = nn.LayerNorm(c.d_model)
        tokens = {"position": AXIS}
        self.out = HookPoint(
            "batch position d_model", "final LayerNorm output: what the output embedding reads", tokens
        )
        self.logits = HookPoint("batch position vocab", "next-token logits", tokens)
        name_hook_points(self)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # [b, t] -> [b, t, vocab]
        """Logits at every position for the token that follows it."""
        t = ids.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()  # [t, t]
        mask = causal[None, None] & (ids != self.config.pad_id)[:, None, None, :]  # [b, 1, t, t]
        x = self.embed(ids)  # [b, t, d]
        for layer in self.layers:
            x = layer(x, mask)
        x = self.out(self.final_norm(x))
        return self.logits(F.linear(x, self.embed.weight))  # tied output embedding
