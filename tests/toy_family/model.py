"""The toy segment-recurrent model and its config.

Hook points, called once per segment (call index `segment`):

    carry.enter         [batch slot d_model]          the state entering the segment
    block.attn.pattern  [batch head query key]        attention over [state; segment], token axis "seg"
    block.attn.{mask,z}, block.resid_mid, block.ff.{keys,out}
    carry.leave         [batch slot d_model]          the state leaving the segment
    logits              [batch position vocab]        called once, after the last segment
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import nn

from inference.core.hooks import HookPoint, call_scope, name_hook_points
from inference.layers import AttentionFeedForward

FAMILY_NAME = "toy_segments"
AXIS = "seg"  # one segment's positions: state slots, then the segment's tokens


class ToyRecord(BaseModel):
    """What a toy checkpoint records of its run beyond the shared record: how its starting state was set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state_init: Literal["random", "trained"] = Field("random", description="how the carried state's slots start")


@dataclass
class ToySegmentsConfig:
    family: str = FAMILY_NAME
    vocab_size: int = 64
    d_model: int = 16
    n_heads: int = 2
    segment_length: int = 4  # tokens per segment
    state_size: int = 2  # state slots carried from segment to segment
    max_positions: int = 64
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    @property
    def memory_size(self) -> int:
        return self.state_size

    @property
    def max_memory_size(self) -> int:
        return 2 * self.state_size


class ToySegmentsModel(nn.Module):
    def __init__(self, config: ToySegmentsConfig):
        super().__init__()
        c = self.config = config
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.state = nn.Parameter(torch.randn(c.state_size, c.d_model))  # [slots, d]
        self.carry = nn.Module()
        self.carry.enter = HookPoint("batch slot d_model", "the state entering a segment")
        self.block = AttentionFeedForward(c.d_model, c.n_heads, 2 * c.d_model, 0.0, (AXIS, AXIS))
        self.carry.leave = HookPoint("batch slot d_model", "the state leaving a segment")
        self.logits = HookPoint("batch position vocab", "next-token logits")
        name_hook_points(self)

    def forward(self, ids: torch.Tensor, state_size: int) -> torch.Tensor:  # [b, n] -> [b, n, vocab]
        c = self.config
        b = ids.shape[0]
        slots = torch.arange(state_size, device=ids.device) % c.state_size
        state = self.state[slots].unsqueeze(0).expand(b, -1, -1)  # [b, m, d]
        outputs = []
        for segment, start in enumerate(range(0, ids.shape[1], c.segment_length)):
            with call_scope(segment=segment):
                tokens = ids[:, start : start + c.segment_length]  # [b, s]
                x = torch.cat([self.carry.enter(state), self.embed(tokens)], dim=1)  # [b, m+s, d]
                real = torch.cat(
                    [torch.ones(b, state_size, dtype=torch.bool, device=ids.device), tokens != c.pad_id], 1
                )
                h = self.block(x, x, real[:, None, None, :].expand(-1, -1, x.shape[1], -1))  # [b, m+s, d]
                state = self.carry.leave(h[:, :state_size])
                outputs.append(h[:, state_size:])
        return self.logits(F.linear(torch.cat(outputs, dim=1), self.embed.weight))
