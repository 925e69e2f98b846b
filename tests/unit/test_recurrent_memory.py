"""The Recurrent Memory Transformer: the paper's segment mask, memory handed
from segment to segment, truncated backpropagation, and a trace with every
segment's calls."""

from __future__ import annotations

import torch

from inference.core.checkpoint import LoadedModel
from inference.core.family import build_model, config_from_dict
from inference.core.interventions import Interventions, KnockoutSlots
from inference.core.trace import recording, run_with_trace
from inference.families.recurrent_memory.model import segment_mask


def tiny(bptt_depth: int = 0, vocab_size: int = 40, seed: int = 0):
    torch.manual_seed(seed)
    config = config_from_dict(
        {"family": "rmt", "vocab_size": vocab_size, "d_model": 16, "d_ff": 32, "n_heads": 2, "n_layers": 2,
         "segment_length": 4, "memory_size": 2, "bptt_depth": bptt_depth}
    )  # fmt: skip
    return build_model(config).eval()


def test_the_segment_mask_is_the_papers():
    mask = segment_mask(2, torch.tensor([[True, True, True]]))[0, 0].int().tolist()  # read 2, tokens 3, write 2
    assert mask == [
        # r0 r1 t0 t1 t2 w0 w1
        [1, 1, 0, 0, 0, 0, 0],  # read rows: the read block
        [1, 1, 0, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0, 0],  # token rows: the read block and their causal past, never the write block
        [1, 1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 1, 1, 1],  # write rows: everything before them and the whole write block
        [1, 1, 1, 1, 1, 1, 1],
    ]
    padded = segment_mask(1, torch.tensor([[True, False]]))[0, 0]
    assert not padded[:, 2].any()  # a pad token is nobody's key


def test_the_memory_handed_on_is_the_write_blocks_output():
    model = tiny()
    ids = torch.randint(3, 40, (2, 11))  # 3 segments: 4, 4, 3 tokens
    names = ["memory.read", "memory.write", "layers.1.resid_mid", "layers.1.ff.out"]
    with recording(model, names, Interventions()) as (captures, _):
        logits, last = model(ids)
    reads, writes = captures["memory.read"], captures["memory.write"]
    assert [c.index["segment"] for c in reads.calls] == [0, 1, 2]
    for s in (1, 2):
        assert torch.equal(reads.at(segment=s), writes.at(segment=s - 1))
    for s, length in enumerate((4, 4, 3)):
        # pre-LN: the last layer's output is its residual plus its FF output; the write block is its last 2 rows
        output = captures["layers.1.resid_mid"].at(segment=s) + captures["layers.1.ff.out"].at(segment=s)
        torch.testing.assert_close(writes.at(segment=s), output[:, 2 + length :])
    assert torch.equal(writes.at(segment=2), last.detach())
    # The loop is the segments run by hand, each from the memory the previous one wrote.
    memory, pieces = model.initial_memory(2, 2), []
    for start in (0, 4, 8):
        piece, memory = model.segment(memory, ids[:, start : start + 4])
        pieces.append(piece)
    torch.testing.assert_close(torch.cat(pieces, dim=1), logits, rtol=0, atol=0)


def test_starting_from_the_initial_memory_is_a_fresh_run_and_other_memory_changes_the_output():
    model = tiny()
    ids = torch.randint(3, 40, (1, 8))
    fresh, _ = model(ids)
    reset, _ = model(ids, memory=model.initial_memory(1, 2))
    other, _ = model(ids, memory=torch.randn(1, 2, 16))
    assert torch.equal(fresh, reset) and not torch.allclose(fresh, other)


def test_bptt_depth_zero_stops_gradients_at_the_segment_boundary():
    ids = torch.randint(3, 40, (2, 8))
    for depth, reaches in ((0, False), (-1, True), (2, True)):
        model = tiny(bptt_depth=depth).train()
        logits, _ = model(ids)
        logits[:, 4:].sum().backward()  # a loss on the second segment only
        grad = model.memory_init.grad  # the initial memory enters the first segment only
        assert (grad is not None and grad.abs().sum() > 0) == reaches, depth


def test_a_trace_keeps_every_segment_with_its_own_tokens_and_a_knockout_applies(tiny_tokenizer):
    model = tiny(vocab_size=tiny_tokenizer.vocab_size)
    loaded = LoadedModel("tiny-rmt", model, tiny_tokenizer)
    text = "zwei Männer spielen Fußball auf der Wiese"
    segments = -(-len(tiny_tokenizer.encode_sources([text])[0]) // 4)
    trace = run_with_trace(loaded, text, names=["layers.0.attn.pattern", "memory.read"])
    pattern = trace.captures["layers.0.attn.pattern"]
    assert [c.index["segment"] for c in pattern.calls] == list(range(segments))
    assert trace.axis_roles("seg", 0, segment=1)[:2] == ["read_mem", "read_mem"]
    assert trace.axis_tokens("seg", 0, segment=1)[-2:] == ["[write0]", "[write1]"]
    assert trace.run.capabilities >= {"segments", "memory_tokens"}
    knocked = run_with_trace(
        loaded, text, names=["layers.0.attn.pattern"], interventions=Interventions.of(KnockoutSlots(slots=(1,)))
    )
    weights = knocked.captures["layers.0.attn.pattern"].at(segment=1)  # [b, h, q, k]
    assert weights[..., 1].abs().max() == 0 and pattern.at(segment=1)[..., 1].abs().max() > 0
