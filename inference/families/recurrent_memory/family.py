"""The segment-recurrent decoders (RMT, Transformer-XL, no memory) as the
rest of MemLens sees them: what a model can do, how one is traced segment
by segment, and its memory-slot lesion."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inference.core.capabilities import Capability
from inference.core.family import FamilyDefaults
from inference.core.hooks import HookFn
from inference.core.interventions import (
    Intervention,
    KnockoutSlots,
    NoiseMemory,
    ResetMemory,
    TransplantMemory,
)
from inference.core.loaded_model import LoadedModel
from inference.core.losses import StepObjective, next_token_loss
from inference.core.segment_memory import encode_text, memory_lesion_hook, segment_axes
from inference.core.trace import Trace, TraceRequest
from inference.core.tracing import assembled_trace, model_as, recording
from inference.families.recurrent_memory.lesions import knockout_hooks
from inference.families.recurrent_memory.model import CONFIG_NAME, RecurrentMemoryConfig, RecurrentMemoryTransformer


class RecurrentMemoryFamily(FamilyDefaults):
    name = "recurrent_memory"
    config_names = (CONFIG_NAME,)
    config_type = RecurrentMemoryConfig
    title = "Segment-recurrent decoders (paper 002): RMT, Transformer-XL, no memory"

    def build(self, config: RecurrentMemoryConfig) -> RecurrentMemoryTransformer:
        return RecurrentMemoryTransformer(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return next_token_loss(model, batch, objective.label_smoothing)

    def describe(self, config: RecurrentMemoryConfig) -> str:
        return (
            f"{self.title}; d_model {config.d_model}, {config.n_layers} layers, d_ff {config.d_ff}; segments of "
            f"{config.segment_length} tokens, {config.variant}, BPTT depth {config.bptt_depth}"
        )

    def capabilities(self, config: RecurrentMemoryConfig) -> frozenset[Capability]:
        found = {Capability.SEGMENTS, Capability.NEXT_TOKEN}
        found |= {Capability.MEMORY_TOKENS} if config.memory_size else set()
        found |= {Capability.SEGMENT_CACHE} if config.cache_length else set()
        return frozenset(found)

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """One teacher-forced pass over the text, segment by segment; every
        capture keeps each segment's call, and each segment has its own query
        axis (AxisKey("seg", segment=s)) and key axis (AxisKey("ctx", segment=s): cached tokens, then "seg")."""
        if request.targets is not None:
            raise ValueError("a segment-recurrent model reads one text: pass it as the source")
        model, tokenizer = model_as(loaded, RecurrentMemoryTransformer), loaded.tokenizer
        ids = encode_text(loaded, request.sources)  # [b, n]
        with recording(model, request.names, request.interventions) as (captures, memory_size):
            logits = model(ids, memory_size)  # [b, n, vocab]
        tokens, roles = segment_axes(model, tokenizer.display_tokens, ids.cpu(), memory_size)
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=memory_size,
            tokens=tokens,
            roles=roles,
            output_ids=logits.argmax(dim=-1).tolist(),  # [b, n] the next token at every position
            logits=logits,
            decoding=None,
        )

    def intervention_hooks(
        self, model: RecurrentMemoryTransformer, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        if not memory_size:
            return None
        if isinstance(intervention, KnockoutSlots):
            return knockout_hooks(model, intervention, memory_size)
        if isinstance(intervention, ResetMemory | NoiseMemory | TransplantMemory):
            return [(model.memory.read.name, memory_lesion_hook(model, intervention, memory_size))]
        return None


FAMILY = RecurrentMemoryFamily()
