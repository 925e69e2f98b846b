"""The Hugging Face family as the rest of MemLens sees it: causal language models trained elsewhere (GPT-2,
GPT-NeoX, Llama), traced, continued and read as FF memories like MemLens's own language model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.axes import AxisRole
from inference.core.capabilities import Capability
from inference.core.continuation import continuation_trace
from inference.core.family import FamilyDefaults, LoadedModel
from inference.core.ff_memories import FFMemories
from inference.core.losses import StepObjective, next_token_loss
from inference.core.tokenizer import TextTokenizer
from inference.core.trace import Trace, TraceRequest
from inference.core.tracing import model_as
from inference.families.hugging_face.architectures import NormKind, architecture
from inference.families.hugging_face.model import (
    AXIS,
    FAMILY_NAME,
    CachedNextToken,
    HookedCausalLM,
    HuggingFaceConfig,
    build_hooked,
    rms_norm_eps,
)


class HuggingFaceFamily(FamilyDefaults):
    name = FAMILY_NAME
    config_type = HuggingFaceConfig
    title = "Hugging Face causal language model"
    token_axes = {AXIS: AxisRole.TEXT}

    def build(self, config: HuggingFaceConfig) -> HookedCausalLM:
        return build_hooked(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return next_token_loss(model, batch, objective.label_smoothing)

    def capabilities(self, config: HuggingFaceConfig) -> frozenset[Capability]:
        return frozenset({Capability.ATTENTION, Capability.GENERATES_TEXT, Capability.NEXT_TOKEN, Capability.FF_KEYS})

    def prompt_ids(self, config: HuggingFaceConfig, tokenizer: TextTokenizer, text: str) -> list[int]:
        """[BOS] + the tokens of `text`."""
        return [config.bos_id, *tokenizer.encode(text)]

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Continue each text greedily with the model's key/value cache, then record the hook points in one pass
        over [BOS] + text + continuation, one axis "tok" (inference/core/continuation.py)."""
        model, tokenizer = model_as(loaded, HookedCausalLM), loaded.tokenizer
        frame = lambda text: self.prompt_ids(model.config, tokenizer, text)  # noqa: E731
        return continuation_trace(loaded, model, request, frame, AXIS, steps=lambda: CachedNextToken(model))

    def ff_memories(self, model: nn.Module) -> FFMemories:
        """Every block's FF sub-layer (pre-LN: layer output = residual + FF output), stream states read through
        the final norm, as the LM head reads the last one."""
        if not isinstance(model, HookedCausalLM):
            raise TypeError(f"a {type(model).__name__} is not a Hugging Face model MemLens wraps")
        config = model.config
        arch = architecture(config.model_type)
        values = {}
        for i in range(config.n_layers):
            weight = model.down_projection_weight(i).detach().float().cpu()  # conv1d [d_ff, d], linear [d, d_ff]
            values[f"layers.{i}.ff"] = (weight if arch.down_layout == "conv1d" else weight.T).contiguous()  # [d_ff, d]
        embedding = model.part(arch.lm_head).get_parameter("weight").detach().float().cpu()  # [vocab, d]

        def layer_output(layer: str, residual: torch.Tensor, ff_out: torch.Tensor) -> torch.Tensor:
            return residual + ff_out

        readout = norm_readout(model.part(arch.final_norm), arch.final_norm_kind)
        return FFMemories(list(values), values, embedding, layer_output, AXIS, readout)

    def describe(self, config: HuggingFaceConfig) -> str:
        arch = architecture(config.model_type)
        return (
            f"{arch.title} ({config.model_type}) from Hugging Face; d_model {config.d_model}, {config.n_layers} "
            f"layers, {config.n_heads} heads, {config.d_ff} FF keys a layer"
        )


def norm_readout(norm: nn.Module, kind: NormKind) -> Callable[[torch.Tensor], torch.Tensor]:
    """The final norm as a function of CPU float tensors [..., d] (LayerNorm, or RMS norm: weight x h / rms(h))."""
    weight = norm.get_parameter("weight").detach().float().cpu()  # [d]
    if kind == "layer_norm":
        if not isinstance(norm, nn.LayerNorm):
            raise TypeError(f"the final norm is a {type(norm).__name__}, not a LayerNorm")
        bias = None if norm.bias is None else norm.bias.detach().float().cpu()
        shape, eps = norm.normalized_shape, norm.eps

        def layer_norm(h: torch.Tensor) -> torch.Tensor:
            return F.layer_norm(h, shape, weight, bias, eps)

        return layer_norm
    rms_eps = rms_norm_eps(norm)
    if rms_eps is None:
        raise TypeError(f"the final norm is a {type(norm).__name__}, not an RMS norm")

    def rms_norm(h: torch.Tensor) -> torch.Tensor:
        return weight * (h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + rms_eps))

    return rms_norm


FAMILY = HuggingFaceFamily()
