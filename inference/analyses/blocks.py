"""Attention mass in the four blocks of Memory Transformer, Figure 3.

With the query on the left and the key on top:
update  = sequence query on sequence key,
write   = memory query on sequence key (the sequence is written into memory),
read    = sequence query on memory key,
process = memory query on memory key.
Blocks come from the roles of the trace, never from position offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from inference.analyses.attention import stack_of
from inference.core.trace import MEMORY_ROLES, Trace

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


def block_rows(pattern: torch.Tensor, query_roles: list[str], key_roles: list[str]) -> torch.Tensor:
    """pattern [h, q, k] of one example -> block mass per row [h, q, 4]
    (update, write, read, process); pad queries and keys get zero."""
    key_memory = torch.tensor([r in MEMORY_ROLES for r in key_roles])  # [k]
    key_sequence = torch.tensor([r not in MEMORY_ROLES and r != "pad" for r in key_roles])
    query_memory = torch.tensor([r in MEMORY_ROLES for r in query_roles])  # [q]
    query_sequence = torch.tensor([r not in MEMORY_ROLES and r != "pad" for r in query_roles])
    to_memory = (pattern * key_memory).sum(-1)  # [h, q]
    to_sequence = (pattern * key_sequence).sum(-1)
    return torch.stack(
        [
            to_sequence * query_sequence,
            to_sequence * query_memory,
            to_memory * query_sequence,
            to_memory * query_memory,
        ],
        dim=-1,
    )  # [h, q, 4]


def attention_blocks(trace: Trace) -> list[HeadBlocks]:
    """Block mass for every captured attention pattern, layer and head."""
    results = []
    for name, capture in trace.captures.items():
        found = stack_of(name)
        if not found or not capture.calls:
            continue
        query_axis, key_axis = capture.positions["query"], capture.positions["key"]
        per_head = torch.zeros(capture.calls[0].tensor.shape[1], 4)  # [h, 4] summed over rows of every call
        memory_queries = sequence_queries = 0
        for call in capture.calls:  # one per segment or step where the module runs more than once
            pattern = call.tensor  # [b, h, q, k]
            for example in range(pattern.shape[0]):
                query_roles = trace.axis_roles(query_axis, example, **call.index)
                key_roles = trace.axis_roles(key_axis, example, **call.index)
                per_head += block_rows(pattern[example].float(), query_roles, key_roles).sum(dim=1)
                memory_queries += sum(r in MEMORY_ROLES for r in query_roles)
                sequence_queries += sum(r not in MEMORY_ROLES and r != "pad" for r in query_roles)
        rows = max(memory_queries + sequence_queries, 1)
        stack, layer = found
        for head, mass in enumerate((per_head / rows).tolist()):
            results.append(HeadBlocks(stack, layer, head, *mass, memory_queries, sequence_queries))
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
                merged[key] = HeadBlocks(
                    b.stack,
                    b.layer,
                    b.head,
                    *(getattr(b, name) * rows for name in BLOCKS),
                    b.memory_queries,
                    b.sequence_queries,
                )
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
