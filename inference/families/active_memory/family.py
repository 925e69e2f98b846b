"""The active memory models (Neural GPU, Markovian, Extended Neural GPU) as
the rest of MemLens sees them: what they can do, how one is traced step by
step, how a batch is translated, and the state lesions."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.axes import AxisKey, AxisRole
from inference.core.capabilities import Capability
from inference.core.decoding import strip_after_eos
from inference.core.family import FamilyDefaults, LoadedModel
from inference.core.hooks import HookFn
from inference.core.interventions import Intervention, Interventions
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
from inference.families.active_memory.cgru import STATE_AXIS, TARGET_AXIS
from inference.families.active_memory.lesions import (
    STATE_LESIONS,
    ClampGate,
    EditState,
    EncoderSteps,
    gate_clamp_hooks,
    state_edit_hooks,
)
from inference.families.active_memory.model import FAMILY_NAME, VARIANTS, ActiveMemoryConfig, ActiveMemoryModel


class ActiveMemoryFamily(FamilyDefaults):
    name = FAMILY_NAME
    variants = VARIANTS
    config_type = ActiveMemoryConfig
    title = "Active memory (paper 001): Neural GPU, Markovian and Extended Neural GPU"
    token_axes = {STATE_AXIS: AxisRole.STATE, TARGET_AXIS: AxisRole.TARGET}
    lesion_kinds = STATE_LESIONS
    traces_mixed_lengths = False  # the state's length, and so the computation, follows the source's

    def build(self, config: ActiveMemoryConfig) -> ActiveMemoryModel:
        return ActiveMemoryModel(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return teacher_forced_loss(model, batch, objective.label_smoothing)

    def describe(self, config: ActiveMemoryConfig) -> str:
        return config.summary

    def capabilities(self, config: ActiveMemoryConfig) -> frozenset[Capability]:
        return frozenset({Capability.TRANSLATES, Capability.RECURRENT_STEPS, Capability.SOURCE_ATTRIBUTION})

    def source_embedding(self, model: ActiveMemoryModel) -> torch.nn.Module:
        return model.embed  # E: the source into the first row of s0

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Every step of every layer, for sources of one length (the state's length, and so the
        computation, depends on it): greedy outputs, or teacher-forced on the given targets."""
        model = model_as(loaded, ActiveMemoryModel)
        tokenizer, config = loaded.tokenizer, model.config
        src_ids = encode_sources(loaded, request.sources)  # [b, n]
        lengths = (src_ids != config.pad_id).sum(dim=1)
        if len(set(lengths.tolist())) > 1:
            raise ValueError("trace sources of one length together: the state's length follows the source's")
        with recording(model, request.names, request.interventions) as (captures, memory_size):
            output_ids, logits = own_or_given_output(loaded, model, request, src_ids)  # logits [b, t, vocab]
        length = max(config.state_length(src_ids.shape[1]), logits.shape[1])
        state_ids = [row + [config.pad_id] * (length - len(row)) for row in src_ids.tolist()]
        output_tokens = [tokenizer.display_tokens(ids + [config.eos_id]) for ids in output_ids]
        state, tgt = AxisKey(STATE_AXIS), AxisKey(TARGET_AXIS)
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=memory_size,
            tokens={state: [tokenizer.display_tokens(row) for row in state_ids], tgt: output_tokens},
            roles={
                state: token_roles(state_ids, config, Role.SRC),
                tgt: [[Role.TGT] * len(row) for row in output_tokens],
            },
            output_ids=output_ids,
            logits=logits,
            decoding=request.output_decoding,
        )

    def translate(
        self,
        model: ActiveMemoryModel,
        src_ids: torch.Tensor,  # [b, n]
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        """Greedy outputs; sources of each length run together, so an output never depends on the batch."""
        lengths = (src_ids != model.config.pad_id).sum(dim=1).tolist()
        outputs: list[list[int]] = [[] for _ in lengths]
        with applied_interventions(model, interventions):
            for length in sorted(set(lengths)):
                rows = [i for i, n in enumerate(lengths) if n == length]
                tokens, _ = model.greedy(src_ids[rows, :length], max_new_tokens)
                for row, ids in zip(rows, strip_after_eos(tokens.cpu(), model.config.eos_id)):
                    outputs[row] = ids
        return outputs

    def intervention_hooks(
        self, model: ActiveMemoryModel, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        if isinstance(intervention, EditState | EncoderSteps):
            return state_edit_hooks(model, intervention)
        if isinstance(intervention, ClampGate):
            return gate_clamp_hooks(model, intervention)
        return None


FAMILY = ActiveMemoryFamily()
