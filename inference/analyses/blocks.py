"""Attention mass in the four blocks of Memory Transformer, Figure 3.

With the query on the left and the key on top:
update  = sequence query on sequence key,
write   = memory query on sequence key (the sequence is written into memory),
read    = sequence query on memory key,
process = memory query on memory key.
Blocks come from the roles of the trace, never from position offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import torch

from inference.core.hook_names import stack_of
from inference.core.trace import MEMORY_ROLES, Role, Trace

BLOCKS = ("update", "write", "read", "process")


@dataclass
class HeadBlocks:
    stack: str  # e.g. "encoder.attn", "encoder.mem.attn", "decoder.cross_attn"
    layer: int
    head: int
    update: float  # mean over real query rows of the mass in each block;
    write: float  # the four sum to 1 where every query sees some key
    read: float
    process: float
    memory_queries: int  # query rows counted, by kind, over the batch
    sequence_queries: int


def block_mass(pattern: torch.Tensor, blocks: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """pattern [h, q, k] of one example, blocks as (query rows [q], keys [k]) bool selections
    -> each row's mass on the keys of each block [h, q, len(blocks)]; zero where the row is not in the block."""
    return torch.stack([(pattern * keys).sum(-1) * rows for rows, keys in blocks], dim=-1)


def holds_text(role: Role) -> bool:
    """Every role but memory and pad."""
    return role not in MEMORY_ROLES and role != Role.PAD


def sequence_selection(roles: list[Role]) -> torch.Tensor:
    """[positions] True where a position holds text."""
    return torch.tensor([holds_text(r) for r in roles], dtype=torch.bool)


def role_selection(roles: list[Role], chosen: frozenset[Role]) -> torch.Tensor:
    """[positions] True where a position's role is one of `chosen`."""
    return torch.tensor([r in chosen for r in roles], dtype=torch.bool)


def block_rows(pattern: torch.Tensor, query_roles: list[Role], key_roles: list[Role]) -> torch.Tensor:
    """pattern [h, q, k] of one example -> block mass per row [h, q, 4]
    (update, write, read, process); pad queries and keys get zero."""
    query_memory, key_memory = role_selection(query_roles, MEMORY_ROLES), role_selection(key_roles, MEMORY_ROLES)
    query_sequence, key_sequence = sequence_selection(query_roles), sequence_selection(key_roles)
    return block_mass(
        pattern,
        [
            (query_sequence, key_sequence),
            (query_memory, key_sequence),
            (query_sequence, key_memory),
            (query_memory, key_memory),
        ],
    )  # [h, q, 4]


@dataclass(frozen=True)
class PatternCall:
    """One example of one call of a captured attention pattern, with the roles of both axes."""

    name: str  # the pattern's hook name
    stack: str
    layer: int
    index: dict[str, int]  # the call's index, e.g. {"call": 2, "segment": 2}
    example: int
    pattern: torch.Tensor  # [h, q, k]
    query_roles: list[Role]
    key_roles: list[Role]


def pattern_calls(trace: Trace, **index: int) -> Iterator[PatternCall]:
    """Every example of every call of every captured attention pattern, in
    capture order; `index` keeps the calls that match it (e.g. segment=2)."""
    for name, capture in trace.captures.items():
        found = stack_of(name)
        if not found:
            continue
        query_axis, key_axis = capture.positions["query"], capture.positions["key"]
        for call in capture.calls:  # one per segment or step where the module runs more than once
            if any(call.index.get(key) != value for key, value in index.items()):
                continue
            for example in range(call.tensor.shape[0]):
                yield PatternCall(
                    name,
                    *found,
                    call.index,
                    example,
                    call.tensor[example].float(),
                    trace.axis_roles(query_axis, example, **call.index),
                    trace.axis_roles(key_axis, example, **call.index),
                )


def attention_blocks(trace: Trace) -> list[HeadBlocks]:
    """Block mass for every captured attention pattern, layer and head."""
    # (stack, layer) -> [mass [h, 4] summed over rows, memory rows, sequence rows]
    sums: dict[tuple[str, int], list] = {}
    for call in pattern_calls(trace):
        total = sums.setdefault((call.stack, call.layer), [torch.zeros(call.pattern.shape[0], 4), 0, 0])
        total[0] += block_rows(call.pattern, call.query_roles, call.key_roles).sum(dim=1)
        total[1] += int(role_selection(call.query_roles, MEMORY_ROLES).sum())
        total[2] += int(sequence_selection(call.query_roles).sum())
    results = []
    for (stack, layer), (per_head, memory_queries, sequence_queries) in sums.items():
        rows = max(memory_queries + sequence_queries, 1)
        for head, (update, write, read, process) in enumerate((per_head / rows).tolist()):
            results.append(
                HeadBlocks(stack, layer, head, update, write, read, process, memory_queries, sequence_queries)
            )
    return results


def merge_blocks(batches: list[list[HeadBlocks]]) -> list[HeadBlocks]:
    """Block mass over a corpus traced in batches: each head's mass averaged
    over all query rows of all batches (batches weighted by their rows)."""
    merged: dict[tuple[str, int, int], HeadBlocks] = {}
    for blocks in batches:
        for b in blocks:
            key = (b.stack, b.layer, b.head)
            rows = b.memory_queries + b.sequence_queries
            if key not in merged:
                merged[key] = replace(b, **{name: getattr(b, name) * rows for name in BLOCKS})
                continue
            into = merged[key]
            for name in BLOCKS:
                setattr(into, name, getattr(into, name) + getattr(b, name) * rows)
            into.memory_queries += b.memory_queries
            into.sequence_queries += b.sequence_queries
    for b in merged.values():
        rows = max(b.memory_queries + b.sequence_queries, 1)
        for name in BLOCKS:
            setattr(b, name, getattr(b, name) / rows)
    return list(merged.values())
