"""The Hugging Face family as the rest of MemLens sees it: causal language models trained elsewhere (GPT-2,
GPT-NeoX, Llama), traced, continued and read as FF memories like MemLens's own language model."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.axes import AxisKey
from inference.core.capabilities import Capability
from inference.core.decoding import GREEDY, GreedyChooser, generate, pad_batch, strip_after_eos
from inference.core.family import FamilyDefaults
from inference.core.ff_memories import FFMemories
from inference.core.interventions import Interventions
from inference.core.loaded_model import LoadedModel
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import assembled_trace, model_as, recording, token_roles
from inference.families.hugging_face.architectures import NormKind, architecture
from inference.families.hugging_face.model import (
    AXIS,
    HookedCausalLM,
    HuggingFaceConfig,
    build_hooked,
    rms_norm_eps,
)
from inference.families.hugging_face.model import FAMILY as CONFIG_NAME


class HuggingFaceFamily(FamilyDefaults):
    name = "hugging_face"
    config_names = (CONFIG_NAME,)
    config_type = HuggingFaceConfig
    title = "Hugging Face causal language model"

    def build(self, config: HuggingFaceConfig) -> HookedCausalLM:
        return build_hooked(config)

    def capabilities(self, config: HuggingFaceConfig) -> frozenset[Capability]:
        return frozenset({Capability.GENERATES_TEXT, Capability.NEXT_TOKEN, Capability.FF_KEYS})

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Continue each text greedily (`max_new_tokens`, none for 0), then record the hook points in one pass over
        [BOS] + text + continuation, one axis "tok"; continuation positions have the role GENERATED."""
        if request.targets is not None:
            raise ValueError("a language model reads one text: pass it as the source, without a target")
        model, tokenizer = model_as(loaded, HookedCausalLM), loaded.tokenizer
        config = model.config
        if not all(text.strip() for text in request.sources):
            raise ValueError("empty text")
        prompts = [[config.bos_id, *tokenizer.encode(text)] for text in request.sources]
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
        axis = AxisKey(AXIS)
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=memory_size,
            tokens={axis: [tokenizer.display_tokens(row) for row in rows]},
            roles={axis: stream_roles(rows, prompts, streams, config)},
            output_ids=[stream[1:] for stream in streams],
            outputs=[tokenizer.decode(continuation) for continuation in continuations],
            logits=logits,
            decoding=GREEDY if request.max_new_tokens else None,
        )

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


@torch.no_grad()
def greedy_continuation(
    model: HookedCausalLM, prompt: list[int], max_new_tokens: int, interventions: Interventions | None = None
) -> list[int]:
    """The greedy next tokens after `prompt`, stopping at EOS (left out) or where the context window is full.
    No key/value cache: the shared decoding loop re-runs the whole window per new token, with the interventions'
    hooks held around the whole loop."""
    c = model.config
    start = torch.tensor([prompt], dtype=torch.long, device=next(model.parameters()).device)  # [1, t]
    budget = max(0, min(max_new_tokens, c.max_positions - len(prompt)))
    with applied_interventions(model, interventions):
        tokens = generate(lambda ids: model(ids)[:, -1], GreedyChooser(c.pad_id, c.eos_id), start, budget)
    return strip_after_eos(tokens[:, len(prompt) :].cpu(), c.eos_id)[0]


def stream_roles(
    rows: list[list[int]], prompts: list[list[int]], streams: list[list[int]], config: HuggingFaceConfig
) -> list[list[Role]]:
    """TEXT (BOS, EOS: SPECIAL) over each prompt, GENERATED over its continuation, PAD after its stream. Where the
    pad id is also BOS or EOS (GPT-2), a position inside the stream is never padding."""
    roles = token_roles(rows, config, Role.TEXT)
    for row, prompt, stream in zip(roles, prompts, streams):
        for position, role in enumerate(row):
            if position >= len(stream):
                row[position] = Role.PAD
            elif position >= len(prompt):
                row[position] = Role.GENERATED
            elif role == Role.PAD:
                row[position] = Role.SPECIAL
    return roles


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
