"""A text as a segment-recurrent model reads it: ids without special tokens
added, and per segment the tokens and roles of its query axis ("seg") and
key axis ("ctx")."""

from __future__ import annotations

from collections.abc import Callable

import torch

from inference.core.decoding import pad_batch
from inference.core.loaded_model import LoadedModel
from inference.core.trace import indexed_axis
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
) -> tuple[dict[str, list[list[str]]], dict[str, list[list[str]]]]:
    """(tokens, roles) of every segment's "seg" and "ctx" axes, per example."""
    c = model.config
    special = {c.bos_id, c.eos_id}
    read = [f"[read{j}]" for j in range(memory_size)]
    write = [f"[write{j}]" for j in range(memory_size)]
    tokens, roles = {}, {}
    for s, start in enumerate(model.segment_starts(ids.shape[1])):
        cached = model.cached_length(s)
        query, key = indexed_axis(QUERY_AXIS, segment=s), indexed_axis(KEY_AXIS, segment=s)
        tokens[query], roles[query], tokens[key], roles[key] = [], [], [], []
        for row in ids.tolist():
            piece = row[start : start + c.segment_length]
            kinds = ["pad" if i == c.pad_id else "special" if i in special else "tok" for i in piece]
            shown = read + display(piece) + write
            tokens[query].append(shown)
            roles[query].append(["read_mem"] * memory_size + kinds + ["write_mem"] * memory_size)
            tokens[key].append(display(row[start - cached : start]) + shown)
            roles[key].append(["cache"] * cached + roles[query][-1])
    return tokens, roles
