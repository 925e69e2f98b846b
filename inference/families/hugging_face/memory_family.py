"""Memory added to a pretrained causal language model as the rest of MemLens sees it: a segment model like
MemLens's own RMT (the segments page, its memory lesions), started from a trained Hugging Face model."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch
from torch import nn

from inference.core.capabilities import Capability
from inference.core.family import FamilyDefaults, LoadedModel, lesions_in_order
from inference.core.hooks import HookFn, HookPoint
from inference.core.interventions import (
    Intervention,
    KnockoutSlots,
)
from inference.core.lesion_kinds import LesionKind
from inference.core.losses import StepObjective, next_token_loss
from inference.core.segment_memory import (
    MEMORY_TOKEN_LESIONS,
    SEGMENT_AXES,
    knocked_out_slots,
    memory_lesion_hooks,
    segment_trace,
)
from inference.core.trace import Trace, TraceRequest
from inference.core.tracing import model_as
from inference.families.hugging_face.memory_model import FAMILY_NAME, MemoryAugmentedLM, PretrainedMemoryConfig
from inference.families.hugging_face.model import HookedCausalLM, fresh_hf_model


class PretrainedMemoryFamily(FamilyDefaults):
    name = FAMILY_NAME
    config_type = PretrainedMemoryConfig
    title = "Recurrent memory on a pretrained language model (paper 002's wrapper)"
    token_axes = SEGMENT_AXES
    needs_trained_start = True  # memory added to a trained language model (init_from)
    # the memory's fields; the base model's sizes, vocabulary and ids come from the trained model
    warm_start_fields = ("family", "memory_size", "segment_length", "bptt_depth", "carry_memory", "max_positions")

    def build(self, config: PretrainedMemoryConfig) -> MemoryAugmentedLM:
        return MemoryAugmentedLM(fresh_hf_model(config.base_config), config)

    def capabilities(self, config: PretrainedMemoryConfig) -> frozenset[Capability]:
        return frozenset({Capability.ATTENTION, Capability.SEGMENTS, Capability.NEXT_TOKEN, Capability.MEMORY_TOKENS})

    def applicable_lesions(self, config: PretrainedMemoryConfig) -> tuple[type[LesionKind], ...]:
        return lesions_in_order(super().applicable_lesions(config), MEMORY_TOKEN_LESIONS)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return next_token_loss(model, batch, objective.label_smoothing)

    def warm_start(self, source: nn.Module, config_fields: dict[str, Any], seed: int) -> MemoryAugmentedLM:
        """The trained causal LM `source` with memory added: its weights, fresh memory embeddings drawn under `seed`;
        `config_fields` are the wrapper's (memory_size, segment_length, bptt_depth, carry_memory, max_positions)."""
        if not isinstance(source, HookedCausalLM) or isinstance(source, MemoryAugmentedLM):
            raise ValueError("memory is added to a Hugging Face causal language model")
        fields = {key: value for key, value in config_fields.items() if key != "family"}
        if "base" in fields:
            raise ValueError("the base model is the checkpoint started from: remove model.base")
        try:
            config = PretrainedMemoryConfig(base=asdict(source.base_config), **fields)
        except TypeError as error:
            raise ValueError(str(error)) from None
        hf = fresh_hf_model(config.base_config)
        hf.load_state_dict(source.hf.state_dict())
        with torch.random.fork_rng(devices=[]):  # the memory's draw, leaving the caller's generator as it was
            torch.manual_seed(seed)
            model = MemoryAugmentedLM(hf, config)
        return model.to(next(source.parameters()).device)

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """One teacher-forced pass over the text, segment by segment (inference.core.segment_memory.segment_trace)."""
        return segment_trace(loaded, model_as(loaded, MemoryAugmentedLM), request)

    def intervention_hooks(
        self, model: MemoryAugmentedLM, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        return memory_lesion_hooks(
            model,
            intervention,
            memory_size,
            model.memory.read.name,
            lambda knocked: [(model.memory.keys.name, knockout_hook(knocked, memory_size))],
        )

    def describe(self, config: PretrainedMemoryConfig) -> str:
        base = config.base_config
        return (
            f"{config.memory_setup}; segments of {config.segment_length} tokens, BPTT depth {config.bptt_depth}; "
            f"d_model {base.d_model}, {base.n_layers} layers"
        )


def knockout_hook(item: KnockoutSlots, memory_size: int) -> HookFn:
    """No position of a segment reads the knocked-out read slots (the keys every query may read lose them)."""
    slots = knocked_out_slots(item, memory_size)

    def hook(keys: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, m+L+m] bool
        keys = keys.clone()
        keys[:, slots] = False
        return keys

    return hook


FAMILY = PretrainedMemoryFamily()
