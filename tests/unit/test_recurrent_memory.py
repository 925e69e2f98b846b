"""The segment-recurrent decoders of paper 002: the paper's segment mask,
memory handed from segment to segment, truncated backpropagation,
Transformer-XL's cache against full attention, and a trace with every
segment's calls."""

from __future__ import annotations

import pytest
import torch

from inference.core.axes import TokenAxis
from inference.core.family import LoadedModel, build_model, config_from_dict
from inference.core.interventions import (
    InterventionError,
    Interventions,
    KnockoutSlots,
    NoiseMemory,
    ResetMemory,
    TransplantMemory,
)
from inference.core.trace import Role
from inference.core.tracing import recording, run_with_trace
from inference.families.recurrent_memory.model import segment_distances, segment_mask


def tiny(bptt_depth: int = 0, vocab_size: int = 40, seed: int = 0, **sizes):
    torch.manual_seed(seed)
    config = config_from_dict(
        {"family": "recurrent_memory", "vocab_size": vocab_size, "d_model": 16, "d_ff": 32, "n_heads": 2,
         "n_layers": 2, "segment_length": 4, "memory_size": 2, "bptt_depth": bptt_depth} | sizes
    )  # fmt: skip
    model = build_model(config).eval()
    with torch.no_grad():  # the relative-position biases start at zero; make them matter
        for name, parameter in model.named_parameters():
            if name.endswith("_bias"):
                parameter.normal_()
    return model


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


def test_cached_positions_are_seen_by_tokens_and_writes_but_not_by_reads():
    mask = segment_mask(1, torch.tensor([[True, True]]), cached=2)[0, 0].int().tolist()
    assert mask == [
        # c0 c1 r0 t0 t1 w0
        [0, 0, 1, 0, 0, 0],  # read row
        [1, 1, 1, 1, 0, 0],  # token rows: the cache, the read block, their causal past
        [1, 1, 1, 1, 1, 0],
        [1, 1, 1, 1, 1, 1],  # write row: everything
    ]
    distances = segment_distances(3, 2, torch.device("cpu")).tolist()  # 2 cached positions, then a block of 3
    assert distances == [[2, 1, 0, -1, -2], [3, 2, 1, 0, -1], [4, 3, 2, 1, 0]]


def test_transformer_xl_with_a_cache_over_the_whole_input_is_one_full_attention_pass():
    model = tiny(memory_size=0, cache_length=12)  # segments of 4, 12 cached positions: everything before
    ids = torch.randint(3, 40, (2, 12))
    segmented = model(ids)
    full = build_model(model.config.with_segment_length(12)).eval()
    full.load_state_dict(model.state_dict())
    whole = full(ids)
    torch.testing.assert_close(segmented, whole, rtol=1e-5, atol=1e-5)
    short = tiny(memory_size=0, cache_length=4)  # a shorter cache forgets: the last segment differs
    short.load_state_dict(model.state_dict())
    forgetful = short(ids)
    torch.testing.assert_close(forgetful[:, :8], whole[:, :8], rtol=1e-5, atol=1e-5)
    assert (forgetful[:, 8:] - whole[:, 8:]).abs().max() > 1e-3
    alone = tiny(memory_size=0, cache_length=0)  # no memory: each segment as if it were the first
    alone.load_state_dict(model.state_dict())
    separate = alone(ids)
    torch.testing.assert_close(separate[:, 4:8], full(ids[:, 4:8]), rtol=1e-5, atol=1e-5)


def test_the_memory_handed_on_is_the_write_blocks_output():
    model = tiny()
    ids = torch.randint(3, 40, (2, 11))  # 3 segments: 4, 4, 3 tokens
    names = ["memory.read", "memory.write", "layers.1.resid_mid", "layers.1.ff.out"]
    with recording(model, names, Interventions()) as (captures, _):
        logits, last = model.read(ids)
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
    memory, pieces, cache = model.initial_memory(2, 2), [], [torch.zeros(2, 0, 16)] * 2
    for start in (0, 4, 8):
        piece, memory, cache = model.segment(memory, ids[:, start : start + 4], cache)
        pieces.append(piece)
    torch.testing.assert_close(torch.cat(pieces, dim=1), logits, rtol=0, atol=0)


def test_starting_from_the_initial_memory_is_a_fresh_run_and_other_memory_changes_the_output():
    model = tiny()
    ids = torch.randint(3, 40, (1, 8))
    fresh = model(ids)
    reset = model(ids, memory=model.initial_memory(1, 2))
    other = model(ids, memory=torch.randn(1, 2, 16))
    assert torch.equal(fresh, reset) and not torch.allclose(fresh, other)


def test_bptt_depth_zero_stops_gradients_at_the_segment_boundary():
    ids = torch.randint(3, 40, (2, 8))
    for depth, reaches in ((0, False), (-1, True), (2, True)):
        model = tiny(bptt_depth=depth).train()
        logits = model(ids)
        logits[:, 4:].sum().backward()  # a loss on the second segment only
        grad = model.memory_init.grad  # the initial memory enters the first segment only
        assert (grad is not None and grad.abs().sum() > 0) == reaches, depth


def test_a_trace_keeps_every_segment_with_its_own_tokens_and_a_knockout_applies(tiny_tokenizer):
    model = tiny(vocab_size=tiny_tokenizer.vocab_size)
    loaded = LoadedModel("tiny-rmt", model, tiny_tokenizer)
    text = "zwei Männer spielen Fußball auf der Wiese"
    segments = -(-len(tiny_tokenizer.encode(text)) // 4)
    trace = run_with_trace(loaded, text, names=["layers.0.attn.pattern", "memory.read"])
    pattern = trace.captures["layers.0.attn.pattern"]
    assert [c.index["segment"] for c in pattern.calls] == list(range(segments))
    assert trace.axis_roles(TokenAxis("seg"), 0, segment=1)[:2] == [Role.READ_MEM, Role.READ_MEM]
    assert trace.axis_tokens(TokenAxis("seg"), 0, segment=1)[-2:] == ["[write0]", "[write1]"]
    assert trace.run.capabilities >= {"segments", "memory_tokens"}
    knocked = run_with_trace(
        loaded, text, names=["layers.0.attn.pattern"], interventions=Interventions.of(KnockoutSlots(slots=(1,)))
    )
    weights = knocked.captures["layers.0.attn.pattern"].at(segment=1)  # [b, h, q, k]
    assert weights[..., 1].abs().max() == 0 and pattern.at(segment=1)[..., 1].abs().max() > 0


def test_knocking_out_every_slot_leaves_the_read_memory_attending_nothing(tiny_tokenizer):
    """The read memory attends memory alone: with every slot knocked out its rows see no key, get zero weight and
    zero attention output (not NaN, which reached every position through the values and every output)."""
    model = tiny(vocab_size=tiny_tokenizer.vocab_size)
    loaded = LoadedModel("tiny-rmt", model, tiny_tokenizer)
    knocked = run_with_trace(
        loaded, "zwei Männer spielen Fußball", names=["layers.0.attn.pattern"],
        interventions=Interventions.of(KnockoutSlots(slots=(0, 1))),
    )  # fmt: skip
    weights = knocked.captures["layers.0.attn.pattern"].at(segment=1)  # [b, h, q, k]: keys [read ; tokens ; write]
    assert weights[..., :2, :].abs().max() == 0  # the two read rows
    assert torch.allclose(weights[..., 2:, :].sum(-1), torch.ones(()))  # every other row still sums to 1
    assert torch.isfinite(knocked.logits).all()


def lesioned_logits(model, ids: torch.Tensor, *items) -> torch.Tensor:
    with recording(model, [], Interventions.of(*items)) as (_, memory_size):
        return model(ids, memory_size)


def test_resetting_the_memory_at_segment_zero_is_a_fresh_run_and_later_resets_change_only_what_follows():
    model = tiny()
    ids = torch.randint(4, 40, (2, 12))
    fresh = model(ids)
    assert torch.equal(lesioned_logits(model, ids, ResetMemory(segment=0)), fresh)
    reset = lesioned_logits(model, ids, ResetMemory(segment=2))
    assert torch.equal(reset[:, :8], fresh[:, :8]) and (reset[:, 8:] - fresh[:, 8:]).abs().max() > 1e-4
    # by hand: the third segment read from the initial memory, with the cache-free model's segment call
    _, memory_after_two = model.read(ids[:, :8])
    by_hand = model(ids[:, 8:], memory=model.initial_memory(2, 2))
    torch.testing.assert_close(reset[:, 8:], by_hand, rtol=0, atol=0)
    assert not torch.allclose(by_hand, model(ids[:, 8:], memory=memory_after_two))


def test_a_transplant_carries_the_donors_memory_and_noise_is_seeded():
    model = tiny()
    ids, donor = torch.randint(4, 40, (1, 12)), torch.randint(4, 40, (1, 12))
    moved = lesioned_logits(model, ids, TransplantMemory(segment=2, donor=tuple(donor[0].tolist())))
    _, donor_memory = model.read(donor[:, :8])  # what the donor carries into segment 2
    torch.testing.assert_close(moved[:, 8:], model(ids[:, 8:], memory=donor_memory), rtol=1e-6, atol=1e-6)
    with pytest.raises(InterventionError, match="reaches segment 2 only with at least 8"):
        lesioned_logits(model, ids, TransplantMemory(segment=2, donor=(5, 6, 7)))
    noisy = lesioned_logits(model, ids, NoiseMemory(segment=1, scale=0.5, seed=3))
    assert torch.equal(noisy, lesioned_logits(model, ids, NoiseMemory(segment=1, scale=0.5, seed=3)))
    assert not torch.allclose(noisy, lesioned_logits(model, ids, NoiseMemory(segment=1, scale=0.5, seed=4)))
    assert torch.equal(noisy[:, :4], model(ids)[:, :4])


def test_memory_lesions_are_refused_without_memory_tokens():
    model = tiny(memory_size=0, cache_length=4)
    with pytest.raises(InterventionError, match="reset_memory does not apply"):
        lesioned_logits(model, torch.randint(4, 40, (1, 8)), ResetMemory(segment=1))
