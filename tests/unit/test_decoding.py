"""Decoding: the KV cache changes nothing, interventions apply while decoding."""

import pytest
import torch
from pydantic import ValidationError

from inference.core.decoding import Decoding, strip_after_eos
from inference.core.family import LoadedModel
from inference.core.interventions import Interventions, MemorySize, ablate_head
from inference.core.tracing import encode_sources, run_with_trace
from inference.families.memory_transformer.decoding import beam_search, greedy_decode
from tests.conftest import (
    SOURCES,
    make_tiny,
    make_tiny_language_model,
    make_tiny_working_memory,
)

LESIONS = [
    Interventions(),
    Interventions.of(MemorySize(size=0), ablate_head("decoder.layers.0.self_attn", 1)),
]


def test_cached_decoding_equals_uncached_decoding(tiny):
    src_ids = encode_sources(tiny, SOURCES)
    lesions = LESIONS if tiny.config.memory_size else LESIONS[:1]
    for interventions in lesions:
        cached = greedy_decode(tiny.model, src_ids, interventions, max_new_tokens=12, stop_at_eos=False)
        uncached = greedy_decode(
            tiny.model, src_ids, interventions, max_new_tokens=12, use_cache=False, stop_at_eos=False
        )
        assert cached.shape == (len(SOURCES), 12)
        assert torch.equal(cached, uncached)


def test_interventions_apply_during_decoding(tiny_memory):
    src_ids = encode_sources(tiny_memory, SOURCES)
    lesion = Interventions.of(MemorySize(size=0))
    decoded = strip_after_eos(
        greedy_decode(tiny_memory.model, src_ids, lesion, max_new_tokens=12), tiny_memory.config.eos_id
    )
    # A traced run without targets follows the lesioned decode, not the plain one.
    assert (
        run_with_trace(tiny_memory, SOURCES, names=["logits"], interventions=lesion, max_new_tokens=12).output_ids
        == decoded
    )
    plain = greedy_decode(tiny_memory.model, src_ids, max_new_tokens=12, stop_at_eos=False)
    with torch.no_grad():
        first_step = [tiny_memory.model(src_ids, plain[:, :0].new_full((2, 1), 1), m)[:, -1] for m in (None, 0)]
    assert not torch.allclose(*first_step)


def test_beam_of_one_is_greedy(tiny):
    src_ids = encode_sources(tiny, SOURCES)
    greedy = greedy_decode(tiny.model, src_ids, max_new_tokens=10)
    beam = beam_search(tiny.model, src_ids, beam_size=1, max_new_tokens=10)
    width = min(greedy.shape[1], beam.shape[1])
    assert torch.equal(greedy[:, :width], beam[:, :width])


def test_beam_search_scores_at_least_greedy(tiny):
    """The kept hypothesis never has a lower model score than greedy's (no length penalty)."""
    src_ids = encode_sources(tiny, SOURCES[:1])
    greedy = greedy_decode(tiny.model, src_ids, max_new_tokens=8, stop_at_eos=False)
    beam = beam_search(tiny.model, src_ids, beam_size=4, max_new_tokens=8, length_penalty=0.0)

    def score(ids):
        bos = torch.full((1, 1), tiny.config.bos_id)
        tgt_in = torch.cat([bos, ids[:, :-1]], dim=1)
        with torch.no_grad():
            log_probs = tiny.model(src_ids, tgt_in).log_softmax(-1)
        real = ids != tiny.config.pad_id
        return (log_probs.gather(-1, ids[..., None]).squeeze(-1) * real).sum().item()

    assert score(beam) >= score(greedy[:, : beam.shape[1]]) - 1e-4


def test_decoding_is_validated_data():
    assert Decoding() == Decoding(method="greedy") and Decoding().label == "greedy"
    assert Decoding(method="beam", beam_size=4, length_penalty=0.6).label == "beam 4, length penalty 0.6"
    for bad in (
        {"beam_size": 0},
        {"beam_size": 9},
        {"length_penalty": -0.1},
        {"length_penalty": 2.5},
        {"length_penalty": float("nan")},
        {"length_penalty": float("inf")},
        {"method": "sample"},
        {"temperature": 1.0},
    ):
        with pytest.raises(ValidationError):
            Decoding(**{"method": "beam", **bad})
    with pytest.raises(ValidationError):
        Decoding().beam_size = 2  # frozen: a run's decoding cannot change under it


def test_traced_run_follows_the_beam_and_records_it(tiny_memory):
    src_ids = encode_sources(tiny_memory, SOURCES)
    decoding = Decoding(method="beam", beam_size=3, length_penalty=1.0)
    beam = strip_after_eos(
        beam_search(tiny_memory.model, src_ids, 3, max_new_tokens=12, length_penalty=1.0), tiny_memory.config.eos_id
    )
    greedy = run_with_trace(tiny_memory, SOURCES, names=["logits"], max_new_tokens=12)
    trace = run_with_trace(tiny_memory, SOURCES, names=["logits"], max_new_tokens=12, decoding=decoding)
    assert trace.output_ids == beam and trace.decoded
    assert (
        trace.output_ids != greedy.output_ids
    )  # these tiny models decode differently by beam: the test sees which ran
    assert trace.logits.shape[1] == max(len(ids) for ids in beam) + 1  # teacher-forced on BOS + the beam's output
    assert trace.run.decoding == Decoding(method="beam", beam_size=3, length_penalty=1.0)
    assert greedy.run.decoding.method == "greedy"
    forced = run_with_trace(tiny_memory, SOURCES, targets=trace.outputs, names=["logits"])
    assert forced.run.decoding is None


def test_beam_search_is_refused_where_it_does_not_apply(tiny_tokenizer):
    beam = Decoding(method="beam", beam_size=2)
    with pytest.raises(ValueError, match="beam search does not apply to tiny-working-memory"):
        run_with_trace(make_tiny_working_memory(tiny_tokenizer), SOURCES, decoding=beam)
    language_model = LoadedModel("tiny-lm", make_tiny_language_model(tiny_tokenizer), tiny_tokenizer)
    with pytest.raises(ValueError, match="beam search does not apply to tiny-lm"):
        run_with_trace(language_model, SOURCES, decoding=beam)
    with pytest.raises(ValueError, match="a given target is forced"):
        run_with_trace(make_tiny("memtransformer", tiny_tokenizer), SOURCES, targets=SOURCES, decoding=beam)
