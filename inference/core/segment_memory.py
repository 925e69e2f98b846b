"""What every segment-recurrent model with memory tokens shares, whatever reads its segments (MemLens's own RMT,
or memory added to a pretrained language model): its text and axes, segment by segment, and the lesions of the
memory entering a segment (reset, noise, transplant from another input)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import torch

from inference.core.axes import AxisKey, AxisRole
from inference.core.capabilities import FamilyConfig
from inference.core.decoding import pad_batch
from inference.core.family import LoadedModel
from inference.core.hooks import HookFn, HookPoint, current_scope
from inference.core.interventions import (
    Intervention,
    InterventionError,
    KnockoutSlots,
    NoiseMemory,
    ResetMemory,
    TransplantMemory,
)
from inference.core.refusals import InputRefused
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import assembled_trace, recording, token_roles

QUERY_AXIS, KEY_AXIS = "seg", "ctx"  # a segment's positions (read memory, tokens, write memory); what it attends to
SEGMENT_AXES = {QUERY_AXIS: AxisRole.SEGMENT, KEY_AXIS: AxisRole.CONTEXT}  # the token axes of a segment model
# What a segment model with memory tokens takes beyond the memory size and a scale (memory_lesion_hooks applies them)
MEMORY_TOKEN_LESIONS = (KnockoutSlots, ResetMemory, TransplantMemory, NoiseMemory)


@runtime_checkable
class SegmentConfig(FamilyConfig, Protocol):
    """What the config of a model with the segments capability adds."""

    segment_length: int

    @property
    def cache_length(self) -> int: ...  # cached earlier positions per layer (Transformer-XL's); 0 for none

    @property
    def memory_setup(self) -> str: ...  # what is carried between segments, in words


def segment_config(config: FamilyConfig) -> SegmentConfig:
    """`config` as a segment model's; TypeError for a model that reads no segments."""
    if not isinstance(config, SegmentConfig):
        raise TypeError(f"a {config.family} model reads no segments")
    return config


class SegmentMemoryModel(Protocol):
    """A model that reads ids segment by segment, with `memory_size` memory tokens carried between segments."""

    @property
    def config(self) -> SegmentConfig: ...

    @property
    def memory_init(self) -> torch.Tensor: ...  # [m, d] the trained initial memory

    def initial_memory(self, batch: int, memory_size: int) -> torch.Tensor: ...  # [b, m, d]

    def read(
        self, ids: torch.Tensor, memory_size: int | None = None, memory: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]: ...  # (logits [b, n, vocab], the memory after the last segment)

    def segment_starts(self, length: int) -> range: ...

    def cached_length(self, segment: int) -> int: ...  # cached earlier positions a segment attends to

    def __call__(self, ids: torch.Tensor, memory_size: int | None = None) -> torch.Tensor: ...  # [b, n, vocab]


def segment_setup(config: FamilyConfig) -> str | None:
    """How the pages name a segment model: what it carries between segments and its segment length; None for a
    config that says neither."""
    if not isinstance(config, SegmentConfig):
        return None
    return f"{config.memory_setup}; segments of {config.segment_length} tokens"


def memory_tokens_text(count: int) -> str:
    """How a model's variant line names its memory: "1 memory token", "10 memory tokens"."""
    return f"{count} memory token{'s' * (count != 1)}"


def handed_on(memory: torch.Tensor, segment: int, bptt_depth: int) -> torch.Tensor:
    """The memory entering `segment` (> 0) as backpropagation through time sees it: bptt_depth 0 detaches every
    handoff, k > 0 lets gradients flow through k handoffs and cuts the next (every (k+1)-th), -1 never cuts."""
    if bptt_depth == 0 or (bptt_depth > 0 and segment % (bptt_depth + 1) == 0):
        return memory.detach()
    return memory


def segment_trace(loaded: LoadedModel, model: SegmentMemoryModel, request: TraceRequest) -> Trace:
    """One teacher-forced pass over each text, segment by segment: every capture keeps each segment's call, and
    each segment has its own query axis (AxisKey("seg", segment=s)) and key axis (AxisKey("ctx", segment=s):
    cached tokens, then "seg")."""
    if request.targets is not None:
        raise InputRefused("a segment-recurrent model reads one text: pass it as the source")
    ids = encode_text(loaded, request.sources)  # [b, n]
    with recording(loaded.model, request.names, request.interventions) as (captures, memory_size):
        logits = model(ids, memory_size)  # [b, n, vocab]
    tokens, roles = segment_axes(model, loaded.tokenizer.display_tokens, ids.cpu(), memory_size)
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


def encode_text(loaded: LoadedModel, texts: list[str]) -> torch.Tensor:  # [b, n]
    """Texts -> padded ids, read as they are (a task stream names its own <bos>);
    raises ValueError on an empty or overlong text."""
    limit = loaded.config.max_positions
    rows = loaded.tokenizer.encode_batch(texts)
    for ids in rows:
        if not ids:
            raise InputRefused("empty text")
        if len(ids) > limit:
            raise InputRefused(f"the text has {len(ids)} tokens; the model reads at most {limit}")
    return pad_batch(rows, loaded.config.pad_id, loaded.device)


def segment_axes(
    model: SegmentMemoryModel,
    display: Callable[[list[int]], list[str]],
    ids: torch.Tensor,  # [b, n]
    memory_size: int,
) -> tuple[dict[AxisKey, list[list[str]]], dict[AxisKey, list[list[Role]]]]:
    """(tokens, roles) of every segment's "seg" and "ctx" axes, per example, keyed by segment."""
    c = model.config
    rows = ids.tolist()
    text_roles = token_roles(rows, c, Role.TOK)
    read = [f"[read{j}]" for j in range(memory_size)]
    write = [f"[write{j}]" for j in range(memory_size)]
    tokens: dict[AxisKey, list[list[str]]] = {}
    roles: dict[AxisKey, list[list[Role]]] = {}
    for s, start in enumerate(model.segment_starts(ids.shape[1])):
        cached = model.cached_length(s)
        end = start + c.segment_length
        query, key = AxisKey(QUERY_AXIS, segment=s), AxisKey(KEY_AXIS, segment=s)
        tokens[query] = [read + display(row[start:end]) + write for row in rows]
        roles[query] = [
            [Role.READ_MEM] * memory_size + row_roles[start:end] + [Role.WRITE_MEM] * memory_size
            for row_roles in text_roles
        ]
        tokens[key] = [display(row[start - cached : start]) + shown for row, shown in zip(rows, tokens[query])]
        roles[key] = [[Role.CACHE] * cached + shown for shown in roles[query]]
    return tokens, roles


def knocked_out_slots(item: KnockoutSlots, memory_size: int) -> list[int]:
    """The slots a knock-out names; InterventionError where one is beyond the run's memory."""
    bad = [slot for slot in item.slots if slot >= memory_size]
    if bad:
        raise InterventionError(
            f"memory slots {bad} are out of range: the run has {memory_size} (0 to {memory_size - 1})"
        )
    return list(item.slots)


def memory_lesion_hooks(
    model: SegmentMemoryModel,
    intervention: Intervention,
    memory_size: int,
    read_point: str,
    knockout: Callable[[KnockoutSlots], list[tuple[str, HookFn]]],
) -> list[tuple[str, HookFn]] | None:
    """The hooks of a memory lesion of a segment model with memory tokens: reset, noise and transplant on
    `read_point` (the hook point of the memory entering a segment), a knock-out as the family masks slots
    (`knockout`); None for any other intervention, and for every one in a run without memory."""
    if not memory_size:
        return None
    if isinstance(intervention, KnockoutSlots):
        return knockout(intervention)
    if isinstance(intervention, ResetMemory | NoiseMemory | TransplantMemory):
        return [(read_point, memory_lesion_hook(model, intervention, memory_size))]
    return None


def memory_lesion_hook(
    model: SegmentMemoryModel, item: ResetMemory | NoiseMemory | TransplantMemory, memory_size: int
) -> HookFn:
    """A hook on `memory.read` that changes the memory entering segment `item.segment` only."""
    change = _memory_change(model, item, memory_size)

    def hook(memory: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, m, d]
        if current_scope().get("segment") != item.segment:
            return memory
        return change(memory)

    return hook


def _memory_change(
    model: SegmentMemoryModel, item: ResetMemory | NoiseMemory | TransplantMemory, memory_size: int
) -> Callable[[torch.Tensor], torch.Tensor]:
    """What the lesion makes of the memory [b, m, d] entering its segment."""
    if isinstance(item, ResetMemory):
        return lambda memory: model.initial_memory(memory.shape[0], memory_size)
    if isinstance(item, TransplantMemory):
        replacement = donor_memory(model, item, memory_size)  # [1, m, d]
        return lambda memory: replacement.expand(memory.shape[0], -1, -1)
    noise = item

    def noisy(memory: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator(device=memory.device).manual_seed(noise.seed)
        drawn = torch.randn(memory.shape, generator=generator, device=memory.device, dtype=memory.dtype)
        return memory + noise.scale * memory.pow(2).mean().sqrt() * drawn

    return noisy


def donor_memory(model: SegmentMemoryModel, item: TransplantMemory, memory_size: int) -> torch.Tensor:
    """[1, m, d]: the memory the donor input carries into segment `item.segment`."""
    length = model.config.segment_length
    needed = item.segment * length
    if len(item.donor) < needed:
        raise InterventionError(
            f"the donor input has {len(item.donor)} tokens; it reaches segment {item.segment} "
            f"only with at least {needed} ({length} per segment)"
        )
    if item.segment == 0:
        return model.initial_memory(1, memory_size)
    if max(item.donor) >= model.config.vocab_size:
        raise InterventionError(f"donor token ids must be below the vocabulary size {model.config.vocab_size}")
    ids = torch.tensor([item.donor[:needed]], device=model.memory_init.device)  # [1, needed]
    with torch.no_grad():
        _, memory = model.read(ids, memory_size)
    return memory
