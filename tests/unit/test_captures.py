"""Captures keep every call of a hook point with its index; call scopes nest and reset."""

import pytest
import torch

from inference.core.axes import TokenAxis
from inference.core.decoding import pad_batch
from inference.core.hooks import call_scope, current_scope
from inference.core.interventions import Interventions
from inference.core.tracing import encode_sources, recording
from inference.families.memory_transformer.decoding import greedy_decode
from tests.conftest import SOURCES, make_tiny

SELF_ATTENTION = "decoder.layers.0.self_attn.pattern"
CROSS_ATTENTION = "decoder.layers.0.cross_attn.pattern"
STEPS = 5


def test_a_capture_keeps_every_decoding_position(tiny_tokenizer):
    """Decoder attention captured during cached greedy decoding: one call per
    position, each the row of the new token, as a teacher-forced pass sees it."""
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    model, config = loaded.model, loaded.config
    src_ids = encode_sources(loaded, SOURCES)  # [b, n]
    with recording(model, [SELF_ATTENTION, CROSS_ATTENTION], Interventions()) as (captures, _):
        generated = greedy_decode(model, src_ids, max_new_tokens=STEPS, stop_at_eos=False)  # [b, STEPS]
    capture = captures[SELF_ATTENTION]

    assert [call.index for call in capture.calls] == [{"call": i, "position": i} for i in range(STEPS)]
    assert capture.index_names == ("position",)
    assert capture.dims == ("batch", "head", "query", "key")
    assert capture.positions == {"query": TokenAxis("dec"), "key": TokenAxis("dec")}

    tgt_in = pad_batch([[config.bos_id] + row for row in generated[:, :-1].tolist()], config.pad_id)  # [b, STEPS]
    with recording(model, [SELF_ATTENTION], Interventions()) as (forced, _):
        model(src_ids, tgt_in)
    whole = forced[SELF_ATTENTION].at()  # [b, h, STEPS, STEPS]
    for position in range(STEPS):
        row = capture.at(position=position)  # [b, h, 1, position + 1]: the new query against the keys so far
        assert row.shape == (len(SOURCES), config.n_heads, 1, position + 1)
        torch.testing.assert_close(row[:, :, 0], whole[:, :, position, : position + 1], atol=1e-5, rtol=0)

    with pytest.raises(ValueError, match=f"{SELF_ATTENTION}: its calls have different shapes"):
        capture.stacked()  # the key length grows with every position
    with pytest.raises(LookupError, match=f"{SELF_ATTENTION}: 0 calls match position=99"):
        capture.at(position=99)
    with pytest.raises(LookupError, match=f"{SELF_ATTENTION}: {STEPS} calls match no index"):
        capture.at()

    cross, axes = captures[CROSS_ATTENTION].stacked()  # every position sees the same encoder keys
    assert axes == ("position", "batch", "head", "query", "key")
    assert cross.shape == (STEPS, len(SOURCES), config.n_heads, 1, src_ids.shape[1] + config.memory_size)
    assert torch.equal(cross[3], captures[CROSS_ATTENTION].at(position=3))


def test_call_scopes_nest_and_reset(tiny_tokenizer):
    assert current_scope() == {}
    with call_scope(segment=1):
        assert current_scope() == {"segment": 1}
        with call_scope(step=2):
            assert current_scope() == {"segment": 1, "step": 2}
        assert current_scope() == {"segment": 1}
    assert current_scope() == {}
    with pytest.raises(RuntimeError), call_scope(segment=3):
        raise RuntimeError("a failed run")
    assert current_scope() == {}  # an exception leaves no scope behind

    model = make_tiny("transformer", tiny_tokenizer).model
    vectors = torch.zeros(1, 1, model.config.vocab_size)  # [b, t, vocab]
    with recording(model, ["logits"], Interventions()) as (captures, _):
        with call_scope(segment=1):
            with call_scope(step=2):
                model.logits(vectors)
            model.logits(vectors)
        model.logits(vectors)
    assert [call.index for call in captures["logits"].calls] == [
        {"call": 0, "segment": 1, "step": 2},
        {"call": 1, "segment": 1},
        {"call": 2},
    ]
