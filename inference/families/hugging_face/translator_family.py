"""Hugging Face encoder-decoder translators (Marian, T5) as the rest of MemLens sees them: traced, decoded by greedy
or beam search through the shared loop, attributed onto their source, and read as FF memories (the decoder's FF
layers, as the Memory Transformer's)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.axes import AxisKey, AxisRole
from inference.core.capabilities import Capability
from inference.core.decoding import GREEDY, BeamChooser, Decoding, GreedyChooser, generate, strip_after_eos
from inference.core.family import FamilyDefaults, LoadedModel
from inference.core.ff_memories import FFMemories
from inference.core.interventions import Interventions
from inference.core.losses import StepObjective, teacher_forced_loss
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import (
    assembled_trace,
    encode_sources,
    model_as,
    own_or_given_targets,
    recording,
    token_roles,
)
from inference.families.hugging_face.family import norm_readout
from inference.families.hugging_face.translator_architectures import translator_architecture
from inference.families.hugging_face.translator_model import (
    DECODER_AXIS,
    ENCODER_AXIS,
    FAMILY_NAME,
    HookedTranslator,
    HuggingFaceTranslatorConfig,
    fresh_translator,
)


class HuggingFaceTranslatorFamily(FamilyDefaults):
    name = FAMILY_NAME
    config_type = HuggingFaceTranslatorConfig
    title = "Hugging Face translator"
    token_axes = {ENCODER_AXIS: AxisRole.SOURCE, DECODER_AXIS: AxisRole.TARGET}

    def build(self, config: HuggingFaceTranslatorConfig) -> HookedTranslator:
        return fresh_translator(config)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return teacher_forced_loss(model, batch, objective.label_smoothing)

    def capabilities(self, config: HuggingFaceTranslatorConfig) -> frozenset[Capability]:
        return frozenset(
            {
                Capability.ATTENTION,
                Capability.TRANSLATES,
                Capability.BEAM_SEARCH,
                Capability.FF_KEYS,
                Capability.SOURCE_ATTRIBUTION,
            }
        )

    def describe(self, config: HuggingFaceTranslatorConfig) -> str:
        arch = translator_architecture(config.model_type)
        return (
            f"{arch.title} ({config.model_type}) translator from Hugging Face; d_model {config.d_model}, "
            f"{config.n_encoder_layers}+{config.n_decoder_layers} layers, {config.n_heads} heads, {config.d_ff} FF "
            "keys a layer"
        )

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Decode (as the request says) unless targets are given, then record the hook points in one
        teacher-forced pass over the decoder start token + the output."""
        model, tokenizer, config = model_as(loaded, HookedTranslator), loaded.tokenizer, loaded.config
        src_ids = encode_sources(loaded, request.sources)  # [b, n]
        output_ids, tgt_in = own_or_given_targets(  # tgt_in [b, t]
            loaded,
            request,
            lambda: decode(model, src_ids, request.decoding, request.interventions, request.max_new_tokens),
        )
        with recording(model, request.names, request.interventions) as (captures, memory_size):
            logits = model(src_ids, tgt_in)  # [b, t, vocab]
        src_rows, tgt_rows = src_ids.tolist(), tgt_in.tolist()
        enc, dec = AxisKey(ENCODER_AXIS), AxisKey(DECODER_AXIS)
        # The start token is the pad token in Marian and T5: shown as the special token it is here.
        target_roles = [[Role.SPECIAL, *row[1:]] for row in token_roles(tgt_rows, config, Role.TGT)]
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=memory_size,
            tokens={
                enc: [tokenizer.display_tokens(row) for row in src_rows],
                dec: [tokenizer.display_tokens(row) for row in tgt_rows],
            },
            roles={enc: token_roles(src_rows, config, Role.SRC), dec: target_roles},
            output_ids=output_ids,
            logits=logits,
            decoding=request.output_decoding,
        )

    def translate(
        self,
        model: HookedTranslator,
        src_ids: torch.Tensor,  # [b, n]
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        """Greedy translations (the seed is unused: nothing is sampled)."""
        generated = decode(model, src_ids, GREEDY, interventions, max_new_tokens)
        return strip_after_eos(generated.cpu(), model.config.eos_id)

    def source_embedding(self, model: HookedTranslator) -> nn.Module:
        """The encoder's own token embedding (the decoder's is another module sharing its weight)."""
        return model.part(model.architecture.source_embedding)

    def ff_memories(self, model: nn.Module) -> FFMemories:
        """The decoder's FF layers: pre-LN T5 (layer output = residual + FF output, read through the final RMS
        norm and T5's output scale), post-LN Marian (layer output = LN(residual + FF output), read as it is, with
        its final logits bias)."""
        if not isinstance(model, HookedTranslator):
            raise TypeError(f"a {type(model).__name__} is not a Hugging Face translator MemLens wraps")
        arch, stack = model.architecture, model.architecture.decoder
        values = {
            f"decoder.layers.{i}.ff": model.down_projection_weight(stack, i).detach().float().cpu().T.contiguous()
            for i in range(model.config.n_decoder_layers)
        }  # layer -> [d_ff, d]
        embedding = model.part(arch.lm_head).get_parameter("weight").detach().float().cpu()  # [vocab, d]
        bias = getattr(model.hf, "final_logits_bias", None)
        output_bias = None if bias is None else bias.detach().float().cpu().reshape(-1)  # [vocab]
        if arch.pre_ln:
            assert stack.final_norm is not None
            final = norm_readout(model.part(stack.final_norm), arch.norm_kind)
            scale = model.config.d_model**-0.5 if getattr(model.hf.config, "scale_decoder_outputs", False) else 1.0

            def pre_ln_output(layer: str, residual: torch.Tensor, ff_out: torch.Tensor) -> torch.Tensor:
                return residual + ff_out

            def readout(h: torch.Tensor) -> torch.Tensor:
                return final(h) * scale

            return FFMemories(list(values), values, embedding, pre_ln_output, DECODER_AXIS, readout, output_bias)
        norms = {}
        for i in range(model.config.n_decoder_layers):
            norm = model.part(stack.block(i, "ff_post_norm"))
            if not isinstance(norm, nn.LayerNorm):
                raise TypeError(f"{stack.block(i, 'ff_post_norm')} is a {type(norm).__name__}, not a LayerNorm")
            norms[f"decoder.layers.{i}.ff"] = norm

        def post_ln_output(layer: str, residual: torch.Tensor, ff_out: torch.Tensor) -> torch.Tensor:
            norm = norms[layer]
            weight = norm.weight.detach().float().cpu()
            bias = None if norm.bias is None else norm.bias.detach().float().cpu()
            return F.layer_norm(residual + ff_out, norm.normalized_shape, weight, bias, norm.eps)

        return FFMemories(list(values), values, embedding, post_ln_output, DECODER_AXIS, output_bias=output_bias)


class _CachedStep:
    """The decoder on the newest token, against a key/value cache of the tokens before it, reading the encoder
    states of its row's source. The pad token (the decoder's start token in Marian and T5) is never an output: its
    logit is set to -inf, as Marian's own generation config bans it."""

    def __init__(self, model: HookedTranslator, states: torch.Tensor, src_ids: torch.Tensor):
        self.model, self.states, self.src_ids = model, states, src_ids  # [rows, n, d], [rows, n]
        self.cache = model.new_cache()

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:  # [rows, t] -> next-token logits [rows, vocab]
        logits = self.model.decode(tokens[:, -1:], self.states, self.src_ids, self.cache)[:, -1].clone()
        logits[:, self.model.config.pad_id] = float("-inf")
        return logits

    def reorder(self, order: torch.Tensor) -> None:
        """Follow beams to their new rows (the encoder states are identical within a source's beams)."""
        self.cache.reorder_cache(order)


@torch.no_grad()
def decode(
    model: HookedTranslator,
    src_ids: torch.Tensor,  # [b, n]
    decoding: Decoding = GREEDY,
    interventions: Interventions | None = None,
    max_new_tokens: int = 64,
) -> torch.Tensor:  # [b, steps] generated ids, EOS included, pad after it
    """The model's own output for each source, greedy or by beam search (GNMT length normalisation), one new token
    a step against a key/value cache; a beam's rows read identical encoder states, so reordering beams reorders
    only the cache."""
    c = model.config
    budget = min(max_new_tokens, c.max_positions - 1)
    b, device = src_ids.shape[0], src_ids.device
    with applied_interventions(model, interventions):
        states = model.encode(src_ids)  # [b, n, d]
        if decoding.method == "beam":
            beams = torch.arange(b, device=device).repeat_interleave(decoding.beam_size)  # [b*k] source of each row
            chooser = BeamChooser(b, decoding.beam_size, decoding.length_penalty, c.pad_id, c.eos_id, device)
            start = torch.full((b * decoding.beam_size, 1), c.bos_id, dtype=torch.long, device=device)
            step = _CachedStep(model, states[beams], src_ids[beams])
            tokens = generate(step, chooser, start, budget, reorder=step.reorder)
            return chooser.best(tokens)[:, 1:]
        start = torch.full((b, 1), c.bos_id, dtype=torch.long, device=device)  # [b, 1]
        tokens = generate(_CachedStep(model, states, src_ids), GreedyChooser(c.pad_id, c.eos_id), start, budget)
    return tokens[:, 1:]


FAMILY = HuggingFaceTranslatorFamily()
