"""Attention patterns: rows are distributions, bottlenecks hold, traced equals fast."""

import torch

from inference.analyses.blocks import attention_blocks, block_rows
from inference.core.tracing import encode_sources, run_with_trace
from tests.conftest import SOURCES, TINY_MEMORY

TARGETS = ["a dog plays in the park", "two women read"]


def real_rows(trace, name, example):
    query_axis = trace.captures[name].positions["query"]
    return [r != "pad" for r in trace.axis_roles(query_axis, example)]


def patterns(trace) -> dict:
    """Hook name -> the captured tensor of its only call."""
    return {name: trace.tensor(name) for name in trace.captures}


def test_attention_rows_sum_to_one(tiny):
    trace = run_with_trace(tiny, SOURCES, TARGETS, names=["*.pattern"])
    assert trace.captures, "no pattern captured"
    for name, pattern in patterns(trace).items():
        for example in range(len(SOURCES)):
            rows = pattern[example][:, real_rows(trace, name, example)]  # [h, q_real, k]
            torch.testing.assert_close(rows.sum(-1), torch.ones(rows.shape[:2]), atol=1e-5, rtol=0)


def test_pad_keys_get_no_attention(tiny):
    trace = run_with_trace(tiny, SOURCES, TARGETS, names=["*.pattern"])
    pads_seen = 0
    for name, pattern in patterns(trace).items():
        key_axis = trace.captures[name].positions["key"]
        for example in range(len(SOURCES)):
            pad_keys = torch.tensor([r == "pad" for r in trace.axis_roles(key_axis, example)])
            pads_seen += int(pad_keys.sum())
            assert pattern[example][..., pad_keys].abs().sum() == 0.0
    assert pads_seen > 0, "the batch must contain padding for this test to mean anything"


def test_bottleneck_sequence_sublayer_ignores_sequence_keys(tiny_tokenizer):
    from tests.conftest import make_tiny

    for family in ("membottleneck",):
        loaded = make_tiny(family, tiny_tokenizer)
        trace = run_with_trace(loaded, SOURCES, TARGETS, names=["encoder.*.seq.attn.pattern"])
        assert len(trace.captures) == 2
        for pattern in patterns(trace).values():
            assert pattern[..., TINY_MEMORY:].abs().max() == 0.0
            torch.testing.assert_close(pattern[..., :TINY_MEMORY].sum(-1), torch.ones(pattern.shape[:3]))
        for head in attention_blocks(trace):
            assert head.update == 0.0 and abs(head.read - 1.0) < 1e-5


def test_memctrl_sequence_sublayer_sees_both(tiny_tokenizer):
    from tests.conftest import make_tiny

    trace = run_with_trace(make_tiny("memctrl", tiny_tokenizer), SOURCES, TARGETS, names=["encoder.*.seq.attn.pattern"])
    blocks = attention_blocks(trace)
    assert len(blocks) == 2 * 2  # encoder layers x heads
    for head in blocks:
        assert head.update > 0.0 and head.read > 0.0


def test_traced_logits_equal_fast_logits(tiny):
    trace = run_with_trace(tiny, SOURCES, TARGETS)  # every hook point captured: explicit attention
    src_ids = encode_sources(tiny, SOURCES)
    from inference.core.decoding import pad_batch

    tgt_in = pad_batch([[tiny.config.bos_id] + ids for ids in trace.output_ids], tiny.config.pad_id)
    with torch.no_grad():
        fast = tiny.model(src_ids, tgt_in)  # no hooks: fused attention
    real = tgt_in != tiny.config.pad_id
    torch.testing.assert_close(trace.logits[real], fast[real], atol=1e-5, rtol=0)


def test_block_rows_sum_to_one_per_query_row(tiny_memory):
    trace = run_with_trace(tiny_memory, SOURCES, TARGETS, names=["*.pattern"])
    assert trace.captures, "no pattern captured"
    for name, pattern in patterns(trace).items():
        query_axis, key_axis = trace.captures[name].positions["query"], trace.captures[name].positions["key"]
        for example in range(len(SOURCES)):
            rows = block_rows(
                pattern[example], trace.axis_roles(query_axis, example), trace.axis_roles(key_axis, example)
            )
            real = torch.tensor(real_rows(trace, name, example))
            torch.testing.assert_close(
                rows.sum(-1)[:, real], torch.ones(rows.shape[0], int(real.sum())), atol=1e-5, rtol=0
            )
            assert rows[:, ~real].abs().sum() == 0.0


def test_attention_blocks_cover_every_head(tiny_memory):
    trace = run_with_trace(tiny_memory, SOURCES, TARGETS, names=["*.pattern"])
    blocks = attention_blocks(trace)
    config = tiny_memory.config
    assert len(blocks) == sum(p.shape[1] for p in patterns(trace).values())
    for head in blocks:
        assert 0 <= head.layer < max(config.n_encoder_layers, config.n_decoder_layers)
        assert abs(head.update + head.write + head.read + head.process - 1.0) < 1e-5
    cross = [h for h in blocks if h.stack == "decoder.cross_attn"]
    assert cross and all(h.write == 0 and h.process == 0 for h in cross)  # decoder queries are sequence
    memory_stack = [h for h in blocks if h.stack in ("encoder.attn", "encoder.mem.attn")]
    assert any(h.write > 0 and h.process > 0 for h in memory_stack)


def test_merged_blocks_equal_blocks_of_the_whole_batch(tiny_memory):
    from inference.analyses.blocks import merge_blocks

    whole = attention_blocks(run_with_trace(tiny_memory, SOURCES, TARGETS, names=["*.pattern"]))
    parts = [
        attention_blocks(run_with_trace(tiny_memory, [s], [t], names=["*.pattern"])) for s, t in zip(SOURCES, TARGETS)
    ]
    merged = merge_blocks(parts)
    assert len(merged) == len(whole) > 0, "no head to compare"
    for a, b in zip(whole, merged):
        assert (a.stack, a.layer, a.head) == (b.stack, b.layer, b.head)
        assert (a.memory_queries, a.sequence_queries) == (b.memory_queries, b.sequence_queries)
        for name in ("update", "write", "read", "process"):
            assert abs(getattr(a, name) - getattr(b, name)) < 1e-5
