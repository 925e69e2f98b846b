"""The segment-recurrent decoders (RMT, Transformer-XL, no memory) as the
rest of MemLens sees them: what a model can do, how one is traced segment
by segment, and its memory-slot lesion."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inference.core.capabilities import Capability
from inference.core.family import FamilyDefaults, LoadedModel, lesions_in_order
from inference.core.hooks import HookFn
from inference.core.interventions import (
    Intervention,
)
from inference.core.lesion_kinds import LesionKind
from inference.core.losses import StepObjective, next_token_loss
from inference.core.segment_memory import MEMORY_TOKEN_LESIONS, SEGMENT_AXES, memory_lesion_hooks, segment_trace
from inference.core.trace import Trace, TraceRequest
from inference.core.tracing import model_as
from inference.families.recurrent_memory.lesions import knockout_hooks
from inference.families.recurrent_memory.model import FAMILY_NAME, RecurrentMemoryConfig, RecurrentMemoryTransformer


class RecurrentMemoryFamily(FamilyDefaults):
    name = FAMILY_NAME
    config_type = RecurrentMemoryConfig
    title = "Segment-recurrent decoders (paper 002): RMT, Transformer-XL, no memory"
    token_axes = SEGMENT_AXES

    def build(self, config: RecurrentMemoryConfig) -> RecurrentMemoryTransformer:
        return RecurrentMemoryTransformer(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return next_token_loss(model, batch, objective.label_smoothing)

    def describe(self, config: RecurrentMemoryConfig) -> str:
        return (
            f"{self.title}; d_model {config.d_model}, {config.n_layers} layers, d_ff {config.d_ff}; segments of "
            f"{config.segment_length} tokens, {config.memory_setup}, BPTT depth {config.bptt_depth}"
        )

    def capabilities(self, config: RecurrentMemoryConfig) -> frozenset[Capability]:
        found = {Capability.ATTENTION, Capability.SEGMENTS, Capability.NEXT_TOKEN}
        found |= {Capability.MEMORY_TOKENS} if config.memory_size else set()
        found |= {Capability.SEGMENT_CACHE} if config.cache_length else set()
        return frozenset(found)

    def applicable_lesions(self, config: RecurrentMemoryConfig) -> tuple[type[LesionKind], ...]:
        return lesions_in_order(super().applicable_lesions(config), MEMORY_TOKEN_LESIONS if config.memory_size else ())

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """One teacher-forced pass over the text, segment by segment (inference.core.segment_memory.segment_trace)."""
        return segment_trace(loaded, model_as(loaded, RecurrentMemoryTransformer), request)

    def intervention_hooks(
        self, model: RecurrentMemoryTransformer, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        return memory_lesion_hooks(
            model,
            intervention,
            memory_size,
            model.memory.read.name,
            lambda knocked: knockout_hooks(model, knocked, memory_size),
        )


FAMILY = RecurrentMemoryFamily()
