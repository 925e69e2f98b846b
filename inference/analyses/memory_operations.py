"""What each attention head does with memory, from its attention mass between
blocks of positions, for the segment-recurrent models (RMT, Transformer-XL)
and the Memory Transformer alike. Blocks come from the roles of the trace,
never from position offsets.

Four operations, by the kind of the query and of the key:

    write    memory query on sequence key: the sequence written into memory
    read     sequence query on memory key
    rewrite  memory query on memory key: memory carried into the new memory
    process  sequence query on sequence key

Kinds of positions:

- Memory queries are the memory being written: RMT's write block
  (write_mem), the Memory Transformer's one memory block (mem, read and
  written alike), the working-memory tokens (wm). RMT's read block rows
  (read_mem queries) only hand the memory on to the sequence rows of the
  next layer: they take part in no operation and are not counted.
- Memory keys are all memory positions. In RMT a write row attending the
  write block counts as rewrite, as one attending the read block does: the
  write block enters each segment as the same vectors as the read block,
  the memory handed on.
- Sequence positions are every other role but pad: text, special tokens,
  and Transformer-XL's cached tokens (cache). The cache is earlier text of
  the same sequence at its own relative distances (a cache over the whole
  input is one full-attention pass), so a sequence row attending it
  processes the sequence.

Per head, over the counted query rows (memory and sequence queries that see
at least one key) of all examples and all calls (segments), or of the calls
matching an index (segment=s):

- share: the mean of the row's attention mass in each operation; the four
  sum to 1.
- uniform: the same for attention spread evenly over each row's visible
  keys (the captured mask).
- lift: with s the share, u the uniform share and p the share of counted
  rows of the operation's query kind (p = u + the most a head can add),
  lift = (s - u) / (p - u) where s >= u, from 0 (uniform) to 1 (all of
  those rows' mass in the operation); lift = (s - u) / u below uniform,
  down to -1 (none of it); 0 where the rows have no choice (u = 0 or u = p).
  Lifts of read and process (and of write and rewrite) share their rows, so
  at most one of each pair is positive.
- label: the operation of the largest lift when it reaches LIFT_THRESHOLD
  (0.5: at least halfway from uniform to all), else "none"; "mixed" when
  another operation also reaches the threshold within MIXED_MARGIN (0.1)
  of the top (e.g. a head whose sequence rows read as strongly as its
  memory rows write).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from inference.analyses.blocks import PatternCall, holds_text, pattern_calls
from inference.core.hook_names import EVERY_MASK, EVERY_PATTERN, PATTERN, attention_mask
from inference.core.trace import MEMORY_ROLES, Role, Trace

OPERATIONS = ("write", "read", "rewrite", "process")
MEMORY_QUERY_OPERATIONS = frozenset({"write", "rewrite"})
WRITTEN_ROLES = MEMORY_ROLES - {Role.READ_MEM}  # memory queries: the memory being written
LIFT_THRESHOLD = 0.5
MIXED_MARGIN = 0.1
LABELS = (*OPERATIONS, "mixed", "none")
# Hook names to trace: every attention's pattern and the mask that says which keys it could see.
MEMORY_OPERATION_HOOKS = [EVERY_PATTERN, EVERY_MASK]


@dataclass
class HeadOperations:
    stack: str  # e.g. "attn" (segment-recurrent), "encoder.attn", "decoder.cross_attn"
    layer: int
    head: int
    share: dict[str, float]  # operation -> mean mass over counted query rows; the four sum to 1
    uniform: dict[str, float]  # operation -> the same for uniform attention over the visible keys
    lift: dict[str, float]  # operation -> from -1 (none) through 0 (uniform) to 1 (all)
    label: str  # one of LABELS
    memory_queries: int  # counted query rows, by kind
    sequence_queries: int


def operation_mass(trace: Trace, calls: list[PatternCall]) -> tuple[list, list, list]:
    """For each of calls whose patterns share a shape: each head's mass in each operation over the call's counted
    rows [n, h, 4] (OPERATIONS order), the same for attention spread evenly over the visible keys [n, 4], and the
    counted (memory, sequence) query rows [n, 2], as lists. A row counts where it sees at least one key; an
    operation's mass in a head is then rows^T (pattern @ keys), one product for the four, batched over the calls
    (a call's dozen small tensor operations, one call at a time, were most of the analysis's time), in numpy,
    whose small operations cost less than torch's (the analysis of rmt_copy 0.70 ms against 0.82, of
    memtransformer_10 1.05 against 1.30)."""
    patterns = np.stack([call.pattern.numpy() for call in calls])  # [n, h, q, k]
    visible = np.stack([visible_keys(trace, call).numpy() for call in calls])  # [n, q, k]
    queries = np.stack([_kinds(tuple(call.query_roles), WRITTEN_ROLES) for call in calls])  # [n, q, 2]: memory, text
    queries = queries & visible.any(-1, keepdims=True)
    keys = np.stack([_kinds(tuple(call.key_roles), MEMORY_ROLES) for call in calls])  # [n, k, 2]: memory, text
    # write: memory rows on text keys; read: text rows on memory; rewrite: memory on memory; process: text on text
    rows = queries[..., [0, 1, 0, 1]].astype(np.float32)  # [n, q, 4]
    blocks = keys[..., [1, 0, 0, 1]].astype(np.float32)  # [n, k, 4]
    seen = np.maximum(visible.sum(-1, keepdims=True), 1).astype(np.float32)  # [n, q, 1]: visible keys a row
    uniform = visible.astype(np.float32) / seen  # [n, q, k]: even over the visible keys
    mass = ((patterns @ blocks[:, None]) * rows[:, None]).sum(axis=2)  # [n, h, 4]
    uniform_mass = ((uniform @ blocks) * rows).sum(axis=1)  # [n, 4]
    return mass.tolist(), uniform_mass.tolist(), queries.sum(axis=1).tolist()


@functools.lru_cache(maxsize=256)
def _kinds(roles: tuple[Role, ...], memory: frozenset[Role]) -> np.ndarray:  # [n, 2] bool, shared: read-only
    """(a memory role of `memory`, a text role) of every position; kept per role layout, which every segment of a
    run but the last shares (building it was half of memory_operations' time)."""
    kinds = np.array([(r in memory, holds_text(r)) for r in roles], dtype=bool).reshape(len(roles), 2)
    kinds.setflags(write=False)
    return kinds


def lift(share: float, uniform: float, kind_share: float) -> float:
    """How far `share` lies from uniform towards all of the kind's rows in the operation (module doc)."""
    if share >= uniform:
        room = kind_share - uniform
        return (share - uniform) / room if room > 1e-6 else 0.0
    return (share - uniform) / uniform


def label_of(lifts: dict[str, float]) -> str:
    """The operation that stands out from uniform attention, "mixed" or "none" (module doc)."""
    ranked = sorted(OPERATIONS, key=lambda op: lifts[op], reverse=True)
    top, runner_up = ranked[0], ranked[1]
    if lifts[top] < LIFT_THRESHOLD:
        return "none"
    if lifts[runner_up] >= LIFT_THRESHOLD and lifts[top] - lifts[runner_up] < MIXED_MARGIN:
        return "mixed"
    return top


def memory_operations(trace: Trace, **index: int) -> list[HeadOperations]:
    """Operation shares and a label for every captured attention's layer and
    head, over all examples and all calls, or the calls matching `index`
    (e.g. segment=2). The trace must hold each pattern's mask too (trace
    with names=MEMORY_OPERATION_HOOKS); raises ValueError where it does not."""
    calls = list(pattern_calls(trace, **index))
    by_shape: dict[torch.Size, list[PatternCall]] = {}  # every layer's and segment's alike, but the last segment's
    for call in calls:
        by_shape.setdefault(call.pattern.shape, []).append(call)
    # (stack, layer), in capture order -> [mass [h][4], uniform mass [4], memory rows, sequence rows], summed
    sums: dict[tuple[str, int], list] = {(call.stack, call.layer): [] for call in calls}
    for shaped in by_shape.values():
        for call, *found in zip(shaped, *operation_mass(trace, shaped)):
            total = sums[(call.stack, call.layer)]
            sums[(call.stack, call.layer)] = _added(total, found) if total else found
    results = []
    for (stack, layer), (mass, uniform, (memory_rows, sequence_rows)) in sums.items():
        rows = max(memory_rows + sequence_rows, 1)
        uniform_share = dict(zip(OPERATIONS, (value / rows for value in uniform)))
        kind_share = {op: (memory_rows if op in MEMORY_QUERY_OPERATIONS else sequence_rows) / rows for op in OPERATIONS}
        for head, head_mass in enumerate(mass):
            share = dict(zip(OPERATIONS, (value / rows for value in head_mass)))
            lifts = {op: lift(share[op], uniform_share[op], kind_share[op]) for op in OPERATIONS}
            results.append(
                HeadOperations(
                    stack, layer, head, share, uniform_share, lifts, label_of(lifts), memory_rows, sequence_rows
                )
            )
    return results


def _added(a: list, b: list) -> list:
    """Nested lists of numbers of one shape, added element by element."""
    return [_added(x, y) if isinstance(x, list) else x + y for x, y in zip(a, b)]


def segment_operations(trace: Trace) -> dict[int, list[HeadOperations]]:
    """memory_operations of each segment of a segment-recurrent trace, by segment."""
    segments = sorted({call.index["segment"] for call in pattern_calls(trace) if "segment" in call.index})
    if not segments:
        raise ValueError("the trace has no segments: its model reads its input in one pass")
    return {segment: memory_operations(trace, segment=segment) for segment in segments}


def visible_keys(trace: Trace, call: PatternCall) -> torch.Tensor:
    """[q, k] True where the call's query could attend the key, from the captured mask."""
    mask_name = attention_mask(call.name.removesuffix(f".{PATTERN}"))
    if mask_name not in trace.captures:
        raise ValueError(f"{mask_name} was not captured: trace with names=MEMORY_OPERATION_HOOKS")
    mask = trace.captures[mask_name].at(**call.index)[call.example, 0]  # [q, k] or [1, k]
    return torch.broadcast_to(mask, call.pattern.shape[1:])
