"""The GRU + attention baseline of paper 001 as the rest of MemLens sees it."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.axes import ENCODER_DECODER_AXES, AxisKey
from inference.core.capabilities import Capability
from inference.core.decoding import strip_after_eos
from inference.core.family import FamilyDefaults, LoadedModel
from inference.core.interventions import Interventions
from inference.core.losses import StepObjective, teacher_forced_loss
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import (
    assembled_trace,
    encode_sources,
    model_as,
    own_or_given_output,
    recording,
    token_roles,
)
from inference.families.gru_attention.model import FAMILY_NAME, GRUAttention, GRUAttentionConfig


class GRUAttentionFamily(FamilyDefaults):
    name = FAMILY_NAME
    config_type = GRUAttentionConfig
    title = "GRU encoder-decoder with attention (paper 001's baseline)"
    token_axes = ENCODER_DECODER_AXES

    def build(self, config: GRUAttentionConfig) -> GRUAttention:
        return GRUAttention(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return teacher_forced_loss(model, batch, objective.label_smoothing)

    def describe(self, config: GRUAttentionConfig) -> str:
        return config.summary

    def capabilities(self, config: GRUAttentionConfig) -> frozenset[Capability]:
        return frozenset({Capability.ATTENTION, Capability.TRANSLATES, Capability.SOURCE_ATTRIBUTION})

    def source_embedding(self, model: GRUAttention) -> torch.nn.Module:
        return model.source_embed  # e: the source tokens the bidirectional encoder reads

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Greedy outputs, or teacher-forced on the given targets; the attention of every step."""
        model, tokenizer, config = model_as(loaded, GRUAttention), loaded.tokenizer, loaded.config
        src_ids = encode_sources(loaded, request.sources)  # [b, n]
        with recording(model, request.names, request.interventions) as (captures, memory_size):
            output_ids, logits = own_or_given_output(loaded, model, request, src_ids)  # logits [b, t, vocab]
        steps = logits.shape[1]  # decoder steps: one per output token and the EOS (greedy: up to the cap)
        dec_ids = [([config.bos_id] + ids + [config.pad_id] * steps)[:steps] for ids in output_ids]  # step inputs
        src_rows = src_ids.tolist()
        enc, dec = AxisKey("enc"), AxisKey("dec")
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=memory_size,
            tokens={
                enc: [tokenizer.display_tokens(row) for row in src_rows],
                dec: [tokenizer.display_tokens(row) for row in dec_ids],
            },
            roles={enc: token_roles(src_rows, config, Role.SRC), dec: token_roles(dec_ids, config, Role.TGT)},
            output_ids=output_ids,
            logits=logits,
            decoding=request.output_decoding,
        )

    def translate(
        self,
        model: GRUAttention,
        src_ids: torch.Tensor,
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        with applied_interventions(model, interventions):
            tokens, _ = model.greedy(src_ids, max_new_tokens)
        return strip_after_eos(tokens.cpu(), model.config.eos_id)


FAMILY = GRUAttentionFamily()
