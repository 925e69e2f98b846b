"""Lesions as data.

An `Interventions` value describes what to change in one run; it is a plain
pydantic model, so the app and the JSON API accept it as a request field
unchanged. `applied_interventions` turns it into hooks on the model's hook
points (or, for the memory size, into the model's input) for the length of
one call. Model code is never forked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator
from torch import nn

from inference.hooks import HookFn, HookPoint, hook_points, registered_hooks
from inference.models.working_memory import CHOICE_COLUMN, MEMORY_TYPE, TARGET_TYPE, WorkingMemoryTransformer


class InterventionError(ValueError):
    """An intervention that does not fit the model (out-of-range value, unknown name)."""


# Bounds on what one request may ask for, before the model is consulted; the
# model's own sizes (slots, heads, keys) are checked when the hooks are built.
MAX_LISTED = 1024  # slots, heads, forced tokens or FF edits in one request
MAX_KEYS = 8192  # keys of one FF edit (the widest FF layer shipped has 2,048)
MAX_SCALE = 1000.0
MODULE_NAME = r"^[A-Za-z0-9_.]{1,100}$"


def _unique(items: tuple) -> tuple:
    """Duplicates dropped, first occurrence kept: asking twice is asking once."""
    return tuple(dict.fromkeys(items))


class HeadRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    attn: str = Field(
        pattern=MODULE_NAME,
        description="attention module name (`memlens hooks` lists them without '.z')",
        examples=["encoder.layers.2.attn", "decoder.layers.1.cross_attn"],
    )
    head: int = Field(ge=0, le=MAX_LISTED)


class FFKeyScale(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ff: str = Field(
        pattern=MODULE_NAME, description="feed-forward module name", examples=["decoder.layers.1.ff", "layers.3.ff"]
    )
    keys: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        min_length=1, max_length=MAX_KEYS
    )  # each checked against the layer's width
    scale: float = Field(
        0.0,
        ge=-MAX_SCALE,
        le=MAX_SCALE,
        allow_inf_nan=False,
        description="0 zeroes the keys, 2 doubles their coefficients",
    )

    _unique_keys = field_validator("keys")(_unique)


class Interventions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_size: int | None = Field(
        None,
        ge=0,
        le=MAX_LISTED,
        description="memory at inference ([mem] slots, or working-memory tokens); None = as trained; up to the model's max_memory_size",
    )
    knockout_slots: tuple[Annotated[int, Field(ge=0, le=MAX_LISTED)], ...] = Field(
        (), max_length=MAX_LISTED, description="memory slots no query may attend"
    )
    block_memory_reads: Literal["none", "encoder", "decoder", "both"] = Field(
        "none",
        description="sequence queries may not attend memory keys (encoder self-attention, decoder cross-attention, or both)",
    )
    mask_memory: bool = Field(
        False,
        description="working memory: target-type queries may not attend memory-type keys in decoder self-attention",
    )
    forced_memory: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        (),
        max_length=MAX_LISTED,
        description="working memory: token ids that are the whole memory, written first and in order, whatever the type head chooses; at most the memory size",
    )
    ablate_heads: tuple[HeadRef, ...] = Field(
        (),
        max_length=MAX_LISTED,
        description="heads whose output is zeroed",
        examples=[[{"attn": "decoder.layers.1.cross_attn", "head": 1}]],
    )
    scale_ff_keys: tuple[FFKeyScale, ...] = Field(
        (), max_length=MAX_LISTED, description="feed-forward key coefficients to zero or scale"
    )

    _unique_lists = field_validator("knockout_slots", "ablate_heads", "scale_ff_keys")(_unique)

    def is_noop(self) -> bool:
        return self == Interventions()


NO_INTERVENTIONS = Interventions()


@contextmanager
def applied_interventions(model: nn.Module, interventions: Interventions | None) -> Iterator[int]:
    """Register the hooks of `interventions` on `model`; yield the memory size
    to run with. Raises InterventionError before touching the model when the
    interventions do not fit it."""
    interventions = interventions or NO_INTERVENTIONS
    memory_size = effective_memory_size(model, interventions)
    hooks = intervention_hooks(model, interventions, memory_size)
    with registered_hooks(model, hooks):
        yield memory_size


def effective_memory_size(model: nn.Module, interventions: Interventions) -> int:
    config = model.config
    if interventions.memory_size is None:
        return config.memory_size
    if interventions.memory_size > config.max_memory_size:
        if config.memory_size == 0:
            raise InterventionError(
                f"memory_size {interventions.memory_size} is out of range: this model has no memory"
            )
        raise InterventionError(
            f"memory_size {interventions.memory_size} is out of range: this model allows 0 to {config.max_memory_size} "
            f"({config.max_memory_size // config.memory_size} x its trained {config.memory_size})"
        )
    return interventions.memory_size


def intervention_hooks(model: nn.Module, interventions: Interventions, memory_size: int) -> list[tuple[str, HookFn]]:
    """Validate `interventions` against the model and return its hooks."""
    points = hook_points(model)
    hooks = _working_memory_hooks(model, interventions, memory_size)

    for slot in interventions.knockout_slots:
        if not 0 <= slot < memory_size:
            raise InterventionError(
                f"memory slot {slot} is out of range: the run has {memory_size} slots (0 to {memory_size - 1})"
            )
    if interventions.knockout_slots:
        slots = list(interventions.knockout_slots)
        for name, point in points.items():
            if name.endswith(".mask") and point.axes[1] == "enc":
                hooks.append((name, _knockout_keys(slots)))

    blocked_stacks = {"none": (), "encoder": ("encoder.",), "decoder": ("decoder.",), "both": ("encoder.", "decoder.")}
    for name, point in points.items():
        if (
            name.endswith(".mask")
            and point.axes[1] == "enc"
            and name.startswith(blocked_stacks[interventions.block_memory_reads])
        ):
            _, sequence_rows = model.memory_rows(point.axes[0], memory_size)
            memory_keys, _ = model.memory_rows(point.axes[1], memory_size)
            hooks.append((name, _block_rows_from_keys(sequence_rows, memory_keys)))

    for ref in interventions.ablate_heads:
        point = points.get(f"{ref.attn}.z")
        if point is None:
            raise InterventionError(
                f"unknown attention module {ref.attn!r}; names end in '.attn', e.g. {_example(points, '.z')}"
            )
        n_heads = model.get_submodule(ref.attn).n_heads
        if ref.head >= n_heads:
            raise InterventionError(f"head {ref.head} is out of range for {ref.attn} (heads 0 to {n_heads - 1})")
        hooks.append((point.name, _zero_head(ref.head)))

    for edit in interventions.scale_ff_keys:
        point = points.get(f"{edit.ff}.keys")
        if point is None:
            raise InterventionError(
                f"unknown feed-forward module {edit.ff!r}; names end in '.ff', e.g. {_example(points, '.keys')}"
            )
        d_ff = model.get_submodule(edit.ff).w_in.out_features
        bad = [k for k in edit.keys if not 0 <= k < d_ff]
        if bad:
            raise InterventionError(f"keys {bad} are out of range for {edit.ff} (0 to {d_ff - 1})")
        hooks.append((point.name, _scale_keys(list(edit.keys), edit.scale)))
    return hooks


def _example(points: dict[str, HookPoint], suffix: str) -> str:
    return next((repr(n.removesuffix(suffix)) for n in points if n.endswith(suffix)), "none in this model")


def _knockout_keys(slots: list[int]) -> HookFn:
    def hook(mask: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 1, q, k]
        mask = mask.clone()
        mask[..., slots] = False
        return mask

    return hook


def _block_rows_from_keys(rows: slice, keys: slice) -> HookFn:
    def hook(mask: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 1, q, k]
        mask = mask.clone()
        mask[..., rows, keys] = False
        return mask

    return hook


def _zero_head(head: int) -> HookFn:
    def hook(z: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, h, q, d_head]
        z = z.clone()
        z[:, head] = 0
        return z

    return hook


def _scale_keys(keys: list[int], scale: float) -> HookFn:
    def hook(coefficients: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, t, d_ff]
        coefficients = coefficients.clone()
        coefficients[..., keys] *= scale
        return coefficients

    return hook


# ---------------------------------------------------------------- working memory (paper 004)


def _working_memory_hooks(model: nn.Module, interventions: Interventions, memory_size: int) -> list[tuple[str, HookFn]]:
    """The hooks of mask_memory and forced_memory; checks that the lesions
    asked for belong to the model's family."""
    if not isinstance(model, WorkingMemoryTransformer):
        if interventions.mask_memory or interventions.forced_memory:
            raise InterventionError(
                "mask_memory and forced_memory are lesions of working-memory models; this model has [mem] slots"
            )
        return []
    if interventions.knockout_slots or interventions.block_memory_reads != "none":
        raise InterventionError(
            "knockout_slots and block_memory_reads act on [mem] slots; a working-memory model has none (use mask_memory)"
        )
    vocab_size = model.config.vocab_size
    bad = [t for t in interventions.forced_memory if not 0 <= t < vocab_size]
    if bad:
        raise InterventionError(f"forced memory tokens {bad} are outside the vocabulary (0 to {vocab_size - 1})")
    if len(interventions.forced_memory) > memory_size:
        raise InterventionError(
            f"{len(interventions.forced_memory)} forced memory tokens do not fit a memory of {memory_size}"
        )
    hooks = _mask_memory_hooks(model) if interventions.mask_memory else []
    if interventions.forced_memory:
        hooks.insert(0, ("decoder.wm.choice", _force_memory(list(interventions.forced_memory))))
    return hooks


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

    hooks: list[tuple[str, HookFn]] = [("decoder.wm.types", remember_types)]
    for name in hook_points(model):
        if name.startswith("decoder.") and name.endswith(".self_attn.mask"):
            hooks.append((name, block))
    return hooks


def _force_memory(tokens: list[int]) -> HookFn:
    """The forced tokens are the memory: each example's first len(tokens)
    elements are these memory tokens, in order, whatever the type head
    chose; every later element is a target token (the loop then writes the
    greedy one), so the translation is conditioned on exactly this memory."""
    forced = torch.tensor(tokens, dtype=torch.float32)  # [m]
    state: dict[str, torch.Tensor] = {}

    def hook(record: torch.Tensor, point: HookPoint) -> torch.Tensor:  # [b, 7]
        written = state.get("written")  # [b] forced tokens written so far, per example
        if written is None:
            written = torch.zeros(record.shape[0], dtype=torch.long, device=record.device)
        forcing = (record[:, CHOICE_COLUMN["active"]] == 1) & (written < len(tokens))  # [b]
        record = record.clone()
        record[:, CHOICE_COLUMN["type"]] = torch.where(forcing, MEMORY_TYPE, TARGET_TYPE).float()
        record[forcing, CHOICE_COLUMN["token"]] = forced.to(record.device)[written[forcing]]
        record[forcing, CHOICE_COLUMN["nucleus_size"]] = 0  # written, not sampled
        state["written"] = written + forcing.long()
        return record

    return hook
