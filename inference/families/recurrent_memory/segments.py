"""A text as a segment-recurrent model reads it: ids without special tokens
added, and per segment the tokens and roles of its query axis ("seg") and
key axis ("ctx"), keyed by segment (AxisKey("seg", segment=s))."""

from __future__ import annotations

from collections.abc import Callable

import torch

from inference.core.axes import AxisKey
from inference.core.decoding import pad_batch
from inference.core.loaded_model import LoadedModel
from inference.core.trace import Role
from inference.core.tracing import token_roles
from inference.families.recurrent_memory.model import KEY_AXIS, QUERY_AXIS, RecurrentMemoryTransformer


def encode_text(loaded: LoadedModel, texts: list[str]) -> torch.Tensor:  # [b, n]
    """Texts -> padded ids, read as they are (a task stream names its own <bos>);
    raises ValueError on an empty or overlong text."""
    limit = loaded.config.max_positions
    rows = loaded.tokenizer.encode_batch(texts)
    for ids in rows:
        if not ids:
            raise ValueError("empty text")
        if len(ids) > limit:
            raise ValueError(f"the text has {len(ids)} tokens; the model reads at most {limit}")
    return pad_batch(rows, loaded.config.pad_id, loaded.device)


def segment_axes(
    model: RecurrentMemoryTransformer,
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
