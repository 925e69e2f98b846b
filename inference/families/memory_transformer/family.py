"""The Memory Transformer family as the rest of MemLens sees it: what its
models can do, how one is traced, and its memory lesions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch
from torch import nn

from inference.core.axes import ENCODER_DECODER_AXES, AxisKey, AxisPart, TokenAxis
from inference.core.capabilities import Capability, config_of
from inference.core.decoding import strip_after_eos
from inference.core.family import FamilyDefaults, LoadedModel, lesions_in_order
from inference.core.ff_memories import FFMemories, decoder_ff_memories
from inference.core.hook_names import MASK, kind_of
from inference.core.hooks import HookFn, HookPoint, hook_points
from inference.core.interventions import BlockMemoryReads, Intervention, InterventionError, Interventions, KnockoutSlots
from inference.core.lesion_kinds import LesionKind
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
from inference.families.memory_transformer.decoding import decode, greedy_decode
from inference.families.memory_transformer.growth import grow_memory
from inference.families.memory_transformer.model import (
    FAMILY_NAME,
    VARIANTS,
    MemoryTransformer,
    MemoryTransformerConfig,
)

ENCODER = TokenAxis("enc")  # the source with the memory slots in front of it (the model's layout convention)
VARIANT_NAMES = {  # config variant -> the variant in words
    "transformer": "Transformer baseline",
    "memtransformer": "MemTransformer",
    "memctrl": "MemCtrl",
    "memctrl_shared": "MemCtrl Shared",
    "membottleneck": "MemBottleneck",
    "membottleneck_skip": "MemBottleneck Skip",
}


class MemoryTransformerFamily(FamilyDefaults):
    name = FAMILY_NAME
    variants = VARIANTS
    config_type = MemoryTransformerConfig
    title = "Memory Transformer (paper 000)"
    token_axes = ENCODER_DECODER_AXES

    def build(self, config: MemoryTransformerConfig) -> MemoryTransformer:
        return MemoryTransformer(config)

    def applicable_lesions(self, config: MemoryTransformerConfig) -> tuple[type[LesionKind], ...]:
        slots = (KnockoutSlots, BlockMemoryReads) if config.max_memory_size else ()
        return lesions_in_order(super().applicable_lesions(config), slots)

    def training_loss(self, model: nn.Module, batch: Any, objective: StepObjective) -> torch.Tensor:
        return teacher_forced_loss(model, batch, objective.label_smoothing)

    def describe(self, config: MemoryTransformerConfig) -> str:
        memory = f"{config.memory_size} memory slots" if config.memory_size else "no memory"
        return (
            f"{VARIANT_NAMES[config.variant]}, {memory}; d_model {config.d_model}, "
            f"{config.n_encoder_layers}+{config.n_decoder_layers} layers"
        )

    def warm_start(self, source: nn.Module, config_fields: dict[str, Any], seed: int) -> nn.Module:
        """The same model with more memory slots (the paper's Table 3; growth.py)."""
        config = config_of(source)
        grown = {**asdict(config), "memory_size": config_fields.get("memory_size")}
        if config.family != FAMILY_NAME or config_fields != grown:
            raise ValueError("a Memory Transformer starts from a trained one of the same sizes, its memory grown")
        return grow_memory(source, config_fields["memory_size"], seed)

    def capabilities(self, config: MemoryTransformerConfig) -> frozenset[Capability]:
        found = {Capability.ATTENTION, Capability.TRANSLATES, Capability.BEAM_SEARCH, Capability.FF_KEYS}
        found.add(Capability.ATTRIBUTION)
        if config.memory_size:
            found.add(Capability.MEMORY_TOKENS)
        return frozenset(found)

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """Decode (as the request says) unless targets are given, then record
        the hook points in one teacher-forced pass over BOS + the output.
        On "enc" the memory slots (role MEM) come before the source."""
        model, tokenizer, config = model_as(loaded, MemoryTransformer), loaded.tokenizer, loaded.config
        src_ids = encode_sources(loaded, request.sources)  # [b, n]
        output_ids, tgt_in = own_or_given_targets(  # tgt_in [b, t]
            loaded,
            request,
            lambda: decode(model, src_ids, request.decoding, request.interventions, request.max_new_tokens),
        )
        with recording(model, request.names, request.interventions) as (captures, memory_size):
            logits = model(src_ids, tgt_in, memory_size)  # [b, t, vocab]
        memory_tokens = [f"[mem{j}]" for j in range(memory_size)]
        src_rows, tgt_rows = src_ids.tolist(), tgt_in.tolist()
        enc, dec = AxisKey(ENCODER.name), AxisKey("dec")
        return assembled_trace(
            loaded,
            request,
            captures=captures,
            memory_size=memory_size,
            tokens={
                enc: [memory_tokens + tokenizer.display_tokens(row) for row in src_rows],
                dec: [tokenizer.display_tokens(row) for row in tgt_rows],
            },
            roles={
                enc: [[Role.MEM] * memory_size + row for row in token_roles(src_rows, config, Role.SRC)],
                dec: token_roles(tgt_rows, config, Role.TGT),
            },
            output_ids=output_ids,
            logits=logits,
            decoding=request.output_decoding,
        )

    def translate(
        self,
        model: MemoryTransformer,
        src_ids: torch.Tensor,  # [b, n]
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        """Greedy translations (the seed is unused: nothing is sampled)."""
        return strip_after_eos(greedy_decode(model, src_ids, interventions, max_new_tokens).cpu(), model.config.eos_id)

    def ff_memories(self, model: nn.Module) -> FFMemories:
        """The decoder's FF layers, post-LN."""
        return decoder_ff_memories(model)

    def intervention_hooks(
        self, model: MemoryTransformer, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        if isinstance(intervention, KnockoutSlots):
            return _knockout_hooks(model, intervention, memory_size)
        if isinstance(intervention, BlockMemoryReads):
            return _blocked_read_hooks(model, intervention, memory_size)
        return None


def _memory_key_masks(model: MemoryTransformer) -> dict[str, HookPoint]:
    """The attention masks whose keys run over the encoder axis, where the memory slots come first."""
    return {
        name: p for name, p in hook_points(model).items() if kind_of(name) == MASK and p.positions["key"] == ENCODER
    }


def _sequence_rows(query: TokenAxis, memory_size: int) -> slice:
    """The sequence positions along a query axis: on the encoder axis those after the memory slots, none on its
    memory part, every position of any other axis."""
    if query == ENCODER:
        return slice(memory_size, None)
    if query == TokenAxis(ENCODER.name, AxisPart.MEMORY):
        return slice(0, 0)
    return slice(0, None)


def _knockout_hooks(model: MemoryTransformer, item: KnockoutSlots, memory_size: int) -> list[tuple[str, HookFn]]:
    for slot in item.slots:
        if not 0 <= slot < memory_size:
            raise InterventionError(
                f"memory slot {slot} is out of range: the run has {memory_size} slots (0 to {memory_size - 1})"
            )
    slots = list(item.slots)

    def hook(mask: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 1, q, k]
        mask = mask.clone()
        mask[..., slots] = False
        return mask

    return [(name, hook) for name in _memory_key_masks(model)]


def _blocked_read_hooks(model: MemoryTransformer, item: BlockMemoryReads, memory_size: int) -> list[tuple[str, HookFn]]:
    stacks = {"encoder": ("encoder.",), "decoder": ("decoder.",), "both": ("encoder.", "decoder.")}[item.stacks]
    hooks = []
    for name, point in _memory_key_masks(model).items():
        if name.startswith(stacks):
            sequence_rows = _sequence_rows(point.positions["query"], memory_size)
            hooks.append((name, _block_rows_from_keys(sequence_rows, slice(0, memory_size))))
    return hooks


def _block_rows_from_keys(rows: slice, keys: slice) -> HookFn:
    def hook(mask: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 1, q, k]
        mask = mask.clone()
        mask[..., rows, keys] = False
        return mask

    return hook


FAMILY = MemoryTransformerFamily()
