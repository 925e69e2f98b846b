"""The language-model family as the rest of MemLens sees it: what its
models can do and how one is traced."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inference.analyses.ff_values import language_model_ff_memories
from inference.core.axes import AxisKey
from inference.core.capabilities import Capability
from inference.core.decoding import GREEDY, pad_batch
from inference.core.family import FamilyDefaults
from inference.core.ff_memories import FFMemories
from inference.core.loaded_model import LoadedModel
from inference.core.losses import StepObjective, next_token_loss
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import assembled_trace, model_as, recording, token_roles
from inference.families.language_model.continuation import greedy_continuation, prompt_ids
from inference.families.language_model.model import AXIS, LanguageModel, LanguageModelConfig
from inference.families.language_model.model import FAMILY as CONFIG_NAME


class LanguageModelFamily(FamilyDefaults):
    name = "language_model"
    config_names = (CONFIG_NAME,)
    config_type = LanguageModelConfig
    title = "Decoder-only language model (FF memories, paper 003)"

    def build(self, config: LanguageModelConfig) -> LanguageModel:
        return LanguageModel(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return next_token_loss(model, batch, objective.label_smoothing)

    def capabilities(self, config: LanguageModelConfig) -> frozenset[Capability]:
        return frozenset({Capability.GENERATES_TEXT, Capability.NEXT_TOKEN, Capability.FF_KEYS})

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Continue each text greedily (`max_new_tokens`, none for 0), then
        record the hook points in one pass over [EOS] + text + continuation,
        one axis "tok"; continuation positions have the role GENERATED."""
        if request.targets is not None:
            raise ValueError("a language model reads one text: pass it as the source, without a target")
        model, tokenizer, config = model_as(loaded, LanguageModel), loaded.tokenizer, loaded.config
        texts = request.sources
        if not all(text.strip() for text in texts):
            raise ValueError("empty text")
        prompts = [prompt_ids(tokenizer, text) for text in texts]
        for prompt in prompts:
            if len(prompt) > config.max_positions:
                raise ValueError(
                    f"the text has {len(prompt) - 1} tokens; the model reads at most {config.max_positions - 1}"
                )
        continuations = [
            greedy_continuation(model, prompt, request.max_new_tokens, request.interventions) for prompt in prompts
        ]
        streams = [prompt + continuation for prompt, continuation in zip(prompts, continuations)]
        ids = pad_batch(streams, config.pad_id, loaded.device)  # [b, t]
        with recording(model, request.names, request.interventions) as (captures, memory_size):
            logits = model(ids)  # [b, t, vocab]
        rows = ids.tolist()
        roles = token_roles(rows, config, Role.TEXT)
        for row, prompt in zip(roles, prompts):
            row[len(prompt) :] = [Role.GENERATED if role != Role.PAD else role for role in row[len(prompt) :]]
        axis = AxisKey(AXIS)
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=memory_size,
            tokens={axis: [tokenizer.display_tokens(row) for row in rows]},
            roles={axis: roles},
            output_ids=[stream[1:] for stream in streams],
            outputs=[tokenizer.decode(continuation) for continuation in continuations],
            logits=logits,
            decoding=GREEDY if request.max_new_tokens else None,
        )

    def ff_memories(self, model: nn.Module) -> FFMemories:
        """Every layer's FF sub-layer, read through the final LayerNorm."""
        return language_model_ff_memories(model, AXIS)


FAMILY = LanguageModelFamily()
