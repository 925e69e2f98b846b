"""What a segment-recurrent run did, segment by segment: where each segment
lies in the input, which input positions every memory write attended to,
and which next tokens the run got right. Pure functions of a Trace (and the
input ids the trace was run on).

Segments are read from an attention pattern's capture: one call per
segment (index `segment`), its query axis holding the segment's tokens
between memory blocks (roles read_mem, write_mem), its key axis the same
with any cached tokens (role cache) in front."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from inference.analyses.attention import call_indices
from inference.core.refusals import InputRefused
from inference.core.trace import Role, Trace


@dataclass(frozen=True)
class SegmentSpans:
    starts: list[int]  # first input position of every segment
    lengths: list[int]  # its tokens

    def of(self, position: int) -> int:
        """The segment holding an input position."""
        return max(s for s, start in enumerate(self.starts) if start <= position)


MEMORY_BLOCKS = (Role.READ_MEM, Role.WRITE_MEM)
# memory path columns
EXTRA_COLUMNS = {"read memory": Role.READ_MEM, "write memory": Role.WRITE_MEM, "cache": Role.CACHE}


def segment_spans(trace: Trace, pattern: str, example: int = 0) -> SegmentSpans:
    """Where every segment lies in the input, from the token roles of the pattern's query axis; read once a trace
    (a lesioned run's views and its check against the plain run ask again)."""
    return trace.derived(f"segment_spans {pattern} {example}", lambda read: _segment_spans(read, pattern, example))


def _segment_spans(trace: Trace, pattern: str, example: int) -> SegmentSpans:
    capture = trace.captures[pattern]
    starts, lengths, start = [], [], 0
    for index in call_indices(capture):
        roles = trace.axis_roles(capture.positions["query"], example, **index)
        length = sum(role not in (*MEMORY_BLOCKS, Role.PAD) for role in roles)
        starts.append(start)
        lengths.append(length)
        start += length
    return SegmentSpans(starts, lengths)


@dataclass
class MemoryPath:
    """Attention of every memory write (rows: segment s, slot j) over the input
    positions (columns), in one layer, averaged over heads; earlier memory
    (the read block), the write block itself and cached tokens get one column
    each, so every row sums to 1."""

    weights: torch.Tensor  # [segments * slots, positions + 3]: input positions, then read memory, write memory, cache
    rows: list[tuple[int, int]]  # (segment, slot) of every row
    layer: int


def memory_path(trace: Trace, pattern: str, layer: int, positions: int, example: int = 0) -> MemoryPath:
    """Which input positions each memory slot's write attends to, write by write
    (`pattern`: the hook of layer `layer`'s attention pattern). In numpy: a segment's few small operations
    as torch tensors took most of the time."""
    capture = trace.captures[pattern]
    spans = segment_spans(trace, pattern, example)
    rows, weights = [], []
    for s, (index, call) in enumerate(zip(call_indices(capture), capture.calls)):
        query_roles = trace.axis_roles(capture.positions["query"], example, **index)
        writes = [q for q, role in enumerate(query_roles) if role == Role.WRITE_MEM]
        if not writes:
            continue
        tokens, blocks = _key_columns(tuple(trace.axis_roles(capture.positions["key"], example, **index)))
        attention = call.tensor[example].float().numpy()[:, writes].mean(axis=0)  # [slots, k]: the writes' rows
        row = np.zeros((len(writes), positions + len(EXTRA_COLUMNS)), dtype=np.float32)  # [slots, positions + 3]
        row[:, spans.starts[s] : spans.starts[s] + len(tokens)] = attention[:, tokens]
        row[:, positions:] = attention @ blocks  # [slots, 3]: each block's sum
        rows += [(s, slot) for slot in range(len(writes))]
        weights.append(row)
    if not rows:
        raise InputRefused("this run wrote no memory: the model has no memory tokens, or the memory size is 0")
    return MemoryPath(torch.from_numpy(np.concatenate(weights)), rows, layer)


@functools.lru_cache(maxsize=256)
def _key_columns(key_roles: tuple[Role, ...]) -> tuple[list[int], np.ndarray]:
    """The input tokens' keys, and [k, 3] 0/1 of the keys in each extra column, of a key layout (every segment's
    but the last alike)."""
    tokens = [k for k, role in enumerate(key_roles) if role not in (Role.CACHE, *MEMORY_BLOCKS, Role.PAD)]
    blocks = np.array([[found == role for role in EXTRA_COLUMNS.values()] for found in key_roles], dtype=np.float32)
    blocks.setflags(write=False)  # shared by every call of the layout
    return tokens, blocks


@dataclass
class NextTokenHits:
    """Teacher-forced next-token predictions of one input: hit[t] says whether
    the model, having read tokens 0..t-1, predicted token t. Scored from the
    first position after the start-to-generate token when the input has one
    (a task's answer), else from position 1."""

    hits: list[bool | None]  # per input position; None where not scored
    scored_from: int

    @property
    def accuracy(self) -> float:
        scored = [h for h in self.hits if h is not None]
        return sum(scored) / len(scored) if scored else 0.0


def next_token_hits(ids: list[int], predicted: list[int], bos_id: int) -> NextTokenHits:
    """ids: the input; predicted[t]: the model's next token after position t."""
    first = ids.index(bos_id) + 1 if bos_id in ids[:-1] else 1
    hits = [None] * first + [predicted[t - 1] == ids[t] for t in range(first, len(ids))]
    return NextTokenHits(hits, first)
