"""Memory operations of attention heads: hand-built patterns whose answer is
known, a segment-recurrent model with a head forced to read or write, the
shipped Memory Transformer, and the layer x head figure."""

from __future__ import annotations

import pytest
import torch

from app.figures.memory_operations import memory_operations_grid
from inference.analyses.memory_operations import (
    LABELS,
    LIFT_THRESHOLD,
    MEMORY_OPERATION_HOOKS,
    OPERATIONS,
    memory_operations,
    segment_operations,
)
from inference.core.axes import TokenAxis
from inference.core.checkpoint import load_checkpoint
from inference.core.family import LoadedModel
from inference.core.hooks import registered_hooks
from inference.core.trace import Call, Capture, Trace
from inference.core.tracing import run_with_trace
from inference.families.recurrent_memory.model import segment_mask
from tests.conftest import SOURCES
from tests.unit.test_recurrent_memory import tiny

# One RMT segment with 2 cached tokens, 2 memory slots and 3 tokens.
QUERY_ROLES = ["read_mem"] * 2 + ["tok"] * 3 + ["write_mem"] * 2
KEY_ROLES = ["cache"] * 2 + QUERY_ROLES


def focused(visible: torch.Tensor, rows: list[int], keys: list[int]) -> torch.Tensor:
    """[q, k] attention spread evenly over each row's visible keys, except that
    `rows` spread it over their visible keys among `keys` only."""
    chosen = visible.clone()
    chosen[rows] &= torch.isin(torch.arange(visible.shape[1]), torch.tensor(keys))
    weights = chosen.float()
    return weights / weights.sum(-1, keepdim=True)


def hand_trace(patterns: list[torch.Tensor], visible: torch.Tensor, query_roles, key_roles, mask=True) -> Trace:
    """A trace of one example of one layer whose heads have the given [q, k] patterns."""
    pattern = torch.stack(patterns)[None]  # [1, h, q, k]
    positions = {"query": TokenAxis("q"), "key": TokenAxis("k")}
    captures = {"layers.0.attn.pattern": Capture("layers.0.attn.pattern", (), positions, "", [Call({}, pattern)])}
    if mask:
        captures["layers.0.attn.mask"] = Capture(
            "layers.0.attn.mask", (), positions, "", [Call({}, visible[None, None])]
        )
    tokens = {"q": [["x"] * len(query_roles)], "k": [["x"] * len(key_roles)]}
    roles = {"q": [query_roles], "k": [key_roles]}
    return Trace(None, captures, tokens, roles, [], [], [], torch.zeros(0))


def by_head(heads):
    return {(h.stack, h.layer, h.head): h for h in heads}


def test_hand_built_segment_heads_get_the_operation_they_perform():
    visible = segment_mask(2, torch.ones(1, 3, dtype=torch.bool), cached=2)[0, 0]  # [7, 9]
    sequence_rows, write_rows = [2, 3, 4], [5, 6]
    cache, read, tokens, write = [0, 1], [2, 3], [4, 5, 6], [7, 8]
    patterns = [
        focused(visible, sequence_rows, read),  # read
        focused(visible, write_rows, tokens),  # write
        focused(visible, write_rows, read),  # rewrite
        focused(visible, sequence_rows, cache + tokens),  # process, the cache counting as sequence
        focused(visible, [], []),  # uniform
        focused(visible, sequence_rows + write_rows, read),  # reads and rewrites alike
        focused(visible, write_rows, write),  # the write block, the memory handed on: rewrite
    ]
    heads = memory_operations(hand_trace(patterns, visible, QUERY_ROLES, KEY_ROLES))
    labels = [h.label for h in heads]
    assert labels == ["read", "write", "rewrite", "process", "none", "mixed", "rewrite"]
    for h in heads:
        assert (h.memory_queries, h.sequence_queries) == (2, 3)  # read-block rows take part in no operation
        assert sum(h.share.values()) == pytest.approx(1.0, abs=1e-6)
        assert sum(h.uniform.values()) == pytest.approx(1.0, abs=1e-6)
    read_head, uniform_head = heads[0], heads[4]
    assert read_head.share["read"] == pytest.approx(3 / 5) and read_head.lift["read"] == pytest.approx(1.0)
    assert read_head.lift["process"] == pytest.approx(-1.0)
    # Uniform sequence rows see 2 read keys of 3, 4 and 5 visible (cache 2, read 2, tokens 1 to 3).
    assert uniform_head.uniform["read"] == pytest.approx((2 / 5 + 2 / 6 + 2 / 7) / 5)
    assert all(value == pytest.approx(0.0, abs=1e-6) for value in uniform_head.lift.values())


def test_hand_built_memory_transformer_heads_share_one_memory_block():
    query_roles = ["mem"] * 2 + ["src"] * 3 + ["pad"]
    visible = torch.tensor([r != "pad" for r in query_roles]).expand(6, 6)  # every real key, as the encoder sees
    memory, sequence = [0, 1], [2, 3, 4]
    patterns = [
        focused(visible, memory, sequence),  # write
        focused(visible, sequence, memory),  # read
        focused(visible, memory, memory),  # rewrite
        focused(visible, sequence, sequence),  # process
        focused(visible, [], []),
    ]
    heads = memory_operations(hand_trace(patterns, visible, query_roles, query_roles))
    assert [h.label for h in heads] == ["write", "read", "rewrite", "process", "none"]
    assert heads[2].share == pytest.approx({"write": 0.0, "read": 0.6 * 2 / 5, "rewrite": 0.4, "process": 0.6 * 3 / 5})
    assert all((h.memory_queries, h.sequence_queries) == (2, 3) for h in heads)  # the pad row is not counted


def test_a_trace_without_masks_is_refused_with_the_hooks_to_capture():
    visible = torch.ones(3, 3, dtype=torch.bool)
    trace = hand_trace([focused(visible, [], [])], visible, ["mem", "src", "src"], ["mem", "src", "src"], mask=False)
    with pytest.raises(ValueError, match="layers.0.attn.mask was not captured"):
        memory_operations(trace)


def force_heads(model, memory: int):
    """An edit of layer 1's pattern: head 0's token rows attend only the read
    block, head 1's write rows only the segment's tokens."""

    def edit(weights: torch.Tensor, point) -> torch.Tensor:  # [b, h, q, k] with no cache: keys are the queries
        weights = weights.clone()
        tokens = slice(memory, weights.shape[-2] - memory)
        weights[:, 0, tokens] = 0.0
        weights[:, 0, tokens, :memory] = 1.0 / memory
        weights[:, 1, -memory:] = 0.0
        weights[:, 1, -memory:, tokens] = 1.0 / (weights.shape[-2] - 2 * memory)
        return weights

    return registered_hooks(model, [("layers.1.attn.pattern", edit)])


def test_a_recurrent_memory_head_forced_to_read_or_write_is_labelled_so(tiny_tokenizer):
    model = tiny(vocab_size=tiny_tokenizer.vocab_size)
    loaded = LoadedModel("tiny-rmt", model, tiny_tokenizer)
    text = "zwei Männer spielen Fußball auf der Wiese"
    with force_heads(model, memory=2):
        trace = run_with_trace(loaded, text, names=MEMORY_OPERATION_HOOKS)
    heads = by_head(memory_operations(trace))
    assert len(heads) == 2 * 2
    reader, writer = heads[("attn", 1, 0)], heads[("attn", 1, 1)]
    assert reader.label == "read" and reader.lift["read"] == pytest.approx(1.0)
    assert writer.label == "write" and writer.lift["write"] == pytest.approx(1.0)
    segments = segment_operations(trace)
    assert sorted(segments) == list(range(len(trace.captures["layers.1.attn.pattern"].calls)))
    assert len(segments) > 1
    for heads_of_segment in segments.values():
        forced = by_head(heads_of_segment)
        assert forced[("attn", 1, 0)].label == "read" and forced[("attn", 1, 1)].label == "write"
    for h in heads.values():
        assert sum(h.share.values()) == pytest.approx(1.0, abs=1e-5)
        assert h.memory_queries == 2 * len(segments)  # the write rows of every segment
    free = run_with_trace(loaded, text, names=MEMORY_OPERATION_HOOKS)
    assert by_head(memory_operations(free))[("attn", 1, 0)].lift["read"] < 0.99  # the edit made the reader


def test_the_whole_input_pools_its_segments_by_their_counted_rows(tiny_tokenizer):
    """The calls of every layer and segment are batched by shape (the last segment shorter than the others): each
    head's share over the input is its segments' shares weighted by their counted rows, recomputed here."""
    model = tiny(vocab_size=tiny_tokenizer.vocab_size)
    trace = run_with_trace(
        LoadedModel("tiny-rmt", model, tiny_tokenizer), "zwei Männer spielen Fußball auf der Wiese im Park",
        names=MEMORY_OPERATION_HOOKS,
    )  # fmt: skip
    shapes = {call.tensor.shape for call in trace.captures["layers.0.attn.pattern"].calls}
    assert len(shapes) == 2  # full segments and a shorter last one
    whole = by_head(memory_operations(trace))
    segments = [by_head(heads) for heads in segment_operations(trace).values()]
    for key, head in whole.items():
        parts = [segment[key] for segment in segments]
        rows = [part.memory_queries + part.sequence_queries for part in parts]
        assert head.memory_queries == sum(part.memory_queries for part in parts)
        assert head.sequence_queries == sum(part.sequence_queries for part in parts)
        for operation in OPERATIONS:
            pooled = sum(part.share[operation] * n for part, n in zip(parts, rows)) / sum(rows)
            assert head.share[operation] == pytest.approx(pooled, abs=1e-6)
            pooled_uniform = sum(part.uniform[operation] * n for part, n in zip(parts, rows)) / sum(rows)
            assert head.uniform[operation] == pytest.approx(pooled_uniform, abs=1e-6)


def test_transformer_xl_heads_only_process_and_have_no_choice(tiny_tokenizer):
    model = tiny(vocab_size=tiny_tokenizer.vocab_size, memory_size=0, cache_length=4)
    trace = run_with_trace(
        LoadedModel("tiny-xl", model, tiny_tokenizer), "ein Hund läuft durch den Park", names=MEMORY_OPERATION_HOOKS
    )
    for h in memory_operations(trace):
        assert h.share["process"] == pytest.approx(1.0) and h.memory_queries == 0
        assert h.label == "none"  # sequence rows see only sequence keys: uniform or not, no operation stands out


@pytest.fixture(scope="module")
def memtransformer_heads():
    loaded = load_checkpoint("checkpoints/memtransformer_10", "cpu")
    return memory_operations(run_with_trace(loaded, SOURCES, names=MEMORY_OPERATION_HOOKS))


def test_the_shipped_memory_transformer_gets_a_label_per_head(memtransformer_heads):
    stacks = {h.stack for h in memtransformer_heads}
    assert stacks == {"encoder.attn", "decoder.self_attn", "decoder.cross_attn"}
    assert len(memtransformer_heads) == 3 * 4 * 8
    for h in memtransformer_heads:
        assert h.label in LABELS
        assert sum(h.share.values()) == pytest.approx(1.0, abs=1e-5)
        if h.label in OPERATIONS:
            assert h.lift[h.label] >= LIFT_THRESHOLD
    encoder = [h for h in memtransformer_heads if h.stack == "encoder.attn"]
    assert all(h.memory_queries == 10 * len(SOURCES) for h in encoder)
    assert sum(h.label == "read" for h in encoder if h.layer == 0) >= 4  # the first layer's heads read memory
    cross = [h for h in memtransformer_heads if h.stack == "decoder.cross_attn"]
    assert all(h.share["write"] == h.share["rewrite"] == 0.0 for h in cross)  # decoder queries are sequence


def test_the_grid_has_a_cell_per_layer_and_head_with_its_label(memtransformer_heads):
    figure = memory_operations_grid(memtransformer_heads, "encoder.attn")
    cells = figure["data"][0]
    assert cells["z"].shape == (4, 8)
    assert cells["x"] == [f"h{h}" for h in range(8)] and cells["y"] == [f"L{layer}" for layer in range(4)]
    for h in memtransformer_heads:
        if h.stack == "encoder.attn":
            assert LABELS[cells["z"][h.layer, h.head]] == h.label
            assert cells["text"][h.layer][h.head].startswith(h.label)
            assert f"read {h.share['read']:.0%}" in cells["customdata"][h.layer][h.head]
    with pytest.raises(ValueError, match="no head of decoder.mem.attn"):
        memory_operations_grid(memtransformer_heads, "decoder.mem.attn")
