"""The working-memory family as the rest of MemLens sees it: what its
models can do, how one is traced, and its lesions (mask_memory,
force_memory; the memory size caps the tokens it may write)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from inference.core.axes import ENCODER_DECODER_AXES, AxisKey
from inference.core.capabilities import Capability
from inference.core.decoding import GREEDY, pad_batch
from inference.core.family import FamilyDefaults, LoadedModel
from inference.core.ff_memories import FFMemories, decoder_ff_memories
from inference.core.hook_names import MASK, WORKING_MEMORY_CHOICE, WORKING_MEMORY_WRITTEN, kind_of
from inference.core.hooks import HookFn, HookPoint, hook_points, select_hook_names
from inference.core.interventions import (
    Intervention,
    InterventionError,
    Interventions,
)
from inference.core.losses import StepObjective
from inference.core.memory_decisions import CHOICE_COLUMN, MEMORY_TYPE, TARGET_TYPE
from inference.core.refusals import InputRefused
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import assembled_trace, encode_sources, model_as, recording, token_roles
from inference.families.working_memory.generation import generate_with_memory, stream_budget, wm_generate
from inference.families.working_memory.lesions import WORKING_MEMORY_LESIONS, ForceMemory, MaskMemory
from inference.families.working_memory.model import (
    FAMILY_NAME,
    WorkingMemoryConfig,
    WorkingMemoryTransformer,
)
from inference.families.working_memory.training import (
    WARM_START_FIELDS,
    WorkingMemoryTraining,
    from_transformer,
    working_memory_loss,
)

DECISION_HOOKS = [WORKING_MEMORY_CHOICE, WORKING_MEMORY_WRITTEN]  # called once per generated element


class WorkingMemoryFamily(FamilyDefaults):
    name = FAMILY_NAME
    lesion_kinds = WORKING_MEMORY_LESIONS
    config_type = WorkingMemoryConfig
    title = "Working-memory decoder (paper 004)"
    token_axes = ENCODER_DECODER_AXES
    training_options = WorkingMemoryTraining  # Algorithm 1, the config's "working_memory" section
    warm_start_fields = WARM_START_FIELDS

    def first_candidate_epoch(self, options: WorkingMemoryTraining) -> int:
        return options.plain_epochs  # a plain Transformer's epochs are no working memory's checkpoint

    def training_note(self, options: WorkingMemoryTraining) -> str:
        return f" ({options.plain_epochs} of them without memory)" if options.plain_epochs else ""

    def build(self, config: WorkingMemoryConfig) -> WorkingMemoryTransformer:
        return WorkingMemoryTransformer(config)

    def training_loss(self, model: WorkingMemoryTransformer, batch: Any, objective: StepObjective) -> torch.Tensor:
        return working_memory_loss(model, batch, objective)

    def describe(self, config: WorkingMemoryConfig) -> str:
        return (
            f"Working-memory decoder, working memory of {config.memory_size} tokens; d_model {config.d_model}, "
            f"{config.n_encoder_layers}+{config.n_decoder_layers} layers"
        )

    def warm_start(self, source: nn.Module, config_fields: dict[str, Any], seed: int) -> nn.Module:
        return from_transformer(source, config_fields)  # new weights: the type head, from the global seed

    def capabilities(self, config: WorkingMemoryConfig) -> frozenset[Capability]:
        return frozenset({Capability.ATTENTION, Capability.TRANSLATES, Capability.WORKING_MEMORY, Capability.FF_KEYS})

    def trace(self, loaded: LoadedModel, request: TraceRequest) -> Trace:
        """The model is traced on its own generation (it chooses its memory
        while it writes, so a given reference cannot stand in): memory and
        translation are generated with the request's seed, every step's
        decision recorded (`decoder.wm.choice`, `decoder.wm.written`, one call
        per position), then one teacher-forced pass over the generated stream
        (BOS + elements before the final EOS) records the other hook points.
        On the "dec" axis memory tokens have the role WM."""
        if request.targets is not None:
            raise InputRefused(
                "a working-memory model is traced on its own output: it chooses its memory while it writes, "
                "so leave the target out"
            )
        model, tokenizer, config = model_as(loaded, WorkingMemoryTransformer), loaded.tokenizer, loaded.config
        src_ids = encode_sources(loaded, request.sources)  # [b, n]
        with recording(model, DECISION_HOOKS, request.interventions) as (decisions, memory_size):
            generation = generate_with_memory(model, src_ids, memory_size, request.seed, request.max_new_tokens)
        streams = [e.ids[:-1] if e.ids[-1:] == [config.eos_id] else e.ids for e in generation.examples]
        ids = pad_batch([[config.bos_id] + stream for stream in streams], config.pad_id, loaded.device)  # [b, t]
        types = pad_batch(
            [[TARGET_TYPE] + e.types[: len(stream)] for stream, e in zip(streams, generation.examples)],
            TARGET_TYPE,
            loaded.device,
        )  # [b, t]
        key_mask = pad_batch([[1] * (1 + len(stream)) for stream in streams], 0, loaded.device).bool()  # [b, t]
        names = [name for name in select_hook_names(model, request.names) if name not in DECISION_HOOKS]
        with recording(model, names, request.interventions) as (captures, _):
            logits, _ = model(src_ids, ids, types, key_mask)  # [b, t, vocab]
        src_rows, rows = src_ids.tolist(), ids.tolist()
        dec_roles = [  # past the stream: PAD; a memory-type element: WM; else its token's role
            [
                Role.PAD if not real else Role.WM if kind == MEMORY_TYPE else role
                for role, kind, real in zip(token_roles_of_row, types_of_row, real_of_row)
            ]
            for token_roles_of_row, types_of_row, real_of_row in zip(
                token_roles(rows, config, Role.TGT), types.tolist(), key_mask.tolist()
            )
        ]
        enc, dec = AxisKey("enc"), AxisKey("dec")
        return assembled_trace(
            loaded,
            request,
            captures={**captures, **decisions},
            memory_size=memory_size,
            tokens={
                enc: [tokenizer.display_tokens(row) for row in src_rows],
                dec: [tokenizer.display_tokens(row) for row in rows],
            },
            roles={enc: token_roles(src_rows, config, Role.SRC), dec: dec_roles},
            output_ids=streams,
            outputs=[tokenizer.decode(example.translation) for example in generation.examples],
            logits=logits,
            decoding=GREEDY,  # target tokens greedy; memory sampled with the seed
        )

    def translate(
        self,
        model: WorkingMemoryTransformer,
        src_ids: torch.Tensor,  # [b, n]
        interventions: Interventions | None,
        max_new_tokens: int,
        seed: int,
    ) -> list[list[int]]:
        """Target tokens of the generated streams; memory sampled with `seed`."""
        generation = wm_generate(model, src_ids, interventions, seed, stream_budget(model, max_new_tokens))
        return [example.translation for example in generation.examples]

    def ff_memories(self, model: nn.Module) -> FFMemories:
        """The decoder's FF layers, post-LN."""
        return decoder_ff_memories(model)

    def intervention_hooks(
        self, model: WorkingMemoryTransformer, intervention: Intervention, memory_size: int
    ) -> list[tuple[str, HookFn]] | None:
        if isinstance(intervention, MaskMemory):
            return _mask_memory_hooks(model)
        if isinstance(intervention, ForceMemory):
            return [(WORKING_MEMORY_CHOICE, _force_memory(model, intervention, memory_size))]
        return None


def _mask_memory_hooks(model: WorkingMemoryTransformer) -> list[tuple[str, HookFn]]:
    """The paper's lesion: memory is generated, but target-type queries may
    not attend memory-type keys in any decoder self-attention."""
    seen: dict[str, torch.Tensor] = {}

    def remember_types(types: torch.Tensor, point: HookPoint) -> None:  # [b, k]
        seen["types"] = types

    def block(mask: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 1, q, k]
        types = seen["types"]  # [b, k] key types; the queries are the last q keys
        q = mask.shape[2]
        target_queries = types[:, -q:] == TARGET_TYPE  # [b, q]
        memory_keys = types == MEMORY_TYPE  # [b, k]
        return mask & ~(target_queries[:, None, :, None] & memory_keys[:, None, None, :])

    types = model.decoder.wm.types  # its key axis is the decoder stream: the keys of every decoder self-attention
    hooks: list[tuple[str, HookFn]] = [(types.name, remember_types)]
    for name, point in hook_points(model).items():
        if kind_of(name) == MASK and point.positions.get("key") == types.positions["key"]:
            hooks.append((name, block))
    return hooks


def _force_memory(model: WorkingMemoryTransformer, item: ForceMemory, memory_size: int) -> HookFn:
    """The forced tokens are the memory: each example's first len(tokens)
    elements are these memory tokens, in order, whatever the type head
    chose; every later element is a target token (the loop then writes the
    greedy one), so the translation is conditioned on exactly this memory."""
    vocab_size = model.config.vocab_size
    bad = [t for t in item.tokens if not 0 <= t < vocab_size]
    if bad:
        raise InterventionError(f"forced memory tokens {bad} are outside the vocabulary (0 to {vocab_size - 1})")
    if len(item.tokens) > memory_size:
        raise InterventionError(f"{len(item.tokens)} forced memory tokens do not fit a memory of {memory_size}")
    forced = torch.tensor(item.tokens, dtype=torch.float32)  # [m]
    state: dict[str, torch.Tensor] = {}

    def hook(record: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 7]
        written = state.get("written")  # [b] forced tokens written so far, per example
        if written is None:
            written = torch.zeros(record.shape[0], dtype=torch.long, device=record.device)
        forcing = (record[:, CHOICE_COLUMN["active"]] == 1) & (written < len(item.tokens))  # [b]
        record = record.clone()
        record[:, CHOICE_COLUMN["type"]] = torch.where(forcing, MEMORY_TYPE, TARGET_TYPE).float()
        record[forcing, CHOICE_COLUMN["token"]] = forced.to(record.device)[written[forcing]]
        record[forcing, CHOICE_COLUMN["nucleus_size"]] = 0  # written, not sampled
        state["written"] = written + forcing.long()
        return record

    return hook


FAMILY = WorkingMemoryFamily()
