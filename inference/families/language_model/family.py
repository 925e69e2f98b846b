"""The language-model family as the rest of MemLens sees it: what its
models can do and how one is traced."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inference.core.axes import AxisRole
from inference.core.capabilities import Capability
from inference.core.continuation import continuation_trace
from inference.core.family import FamilyDefaults, LoadedModel
from inference.core.ff_memories import FFMemories, language_model_ff_memories
from inference.core.losses import StepObjective, next_token_loss
from inference.core.tokenizer import TextTokenizer
from inference.core.trace import Trace, TraceRequest
from inference.core.tracing import model_as
from inference.families.language_model.model import AXIS, FAMILY_NAME, LanguageModel, LanguageModelConfig


class LanguageModelFamily(FamilyDefaults):
    name = FAMILY_NAME
    config_type = LanguageModelConfig
    title = "Decoder-only language model (FF memories, paper 003)"
    token_axes = {AXIS: AxisRole.TEXT}

    def build(self, config: LanguageModelConfig) -> LanguageModel:
        return LanguageModel(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return next_token_loss(model, batch, objective.label_smoothing)

    def describe(self, config: LanguageModelConfig) -> str:
        return f"{self.title}; d_model {config.d_model}, {config.n_layers} layers, d_ff {config.d_ff}"

    def capabilities(self, config: LanguageModelConfig) -> frozenset[Capability]:
        return frozenset({Capability.ATTENTION, Capability.GENERATES_TEXT, Capability.NEXT_TOKEN, Capability.FF_KEYS})

    def prompt_ids(self, config: LanguageModelConfig, tokenizer: TextTokenizer, text: str) -> list[int]:
        """[EOS] + the tokens of `text`: in the training stream every article follows an EOS
        (training/data/lm_streams.py), so a prompt reads as the start of an article."""
        return [config.eos_id, *tokenizer.encode(text)]

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Continue each text greedily, then record the hook points in one pass over [EOS] + text + continuation,
        one axis "tok" (inference/core/continuation.py)."""
        model, tokenizer = model_as(loaded, LanguageModel), loaded.tokenizer
        frame = lambda text: self.prompt_ids(model.config, tokenizer, text)  # noqa: E731
        return continuation_trace(loaded, model, request, frame, AXIS)

    def ff_memories(self, model: nn.Module) -> FFMemories:
        """Every layer's FF sub-layer, read through the final LayerNorm."""
        return language_model_ff_memories(model, AXIS)


FAMILY = LanguageModelFamily()
