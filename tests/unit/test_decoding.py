"""Decoding: the KV cache changes nothing, interventions apply while decoding."""

import torch

from inference.decoding import beam_search, greedy_decode, strip_after_eos
from inference.interventions import HeadRef, Interventions
from inference.trace import encode_sources, run_with_trace
from tests.conftest import SOURCES

LESIONS = [
    Interventions(),
    Interventions(memory_size=0, ablate_heads=(HeadRef(attn="decoder.layers.0.self_attn", head=1),)),
]


def test_cached_decoding_equals_uncached_decoding(tiny):
    src_ids = encode_sources(tiny, SOURCES)
    lesions = LESIONS if tiny.config.memory_size else LESIONS[:1]
    for interventions in lesions:
        cached = greedy_decode(tiny.model, src_ids, interventions, max_new_tokens=12, stop_at_eos=False)
        uncached = greedy_decode(tiny.model, src_ids, interventions, max_new_tokens=12, use_cache=False, stop_at_eos=False)
        assert cached.shape == (len(SOURCES), 12)
        assert torch.equal(cached, uncached)


def test_interventions_apply_during_decoding(tiny_memory):
    src_ids = encode_sources(tiny_memory, SOURCES)
    lesion = Interventions(memory_size=0)
    decoded = strip_after_eos(greedy_decode(tiny_memory.model, src_ids, lesion, max_new_tokens=12), tiny_memory.config.eos_id)
    # A traced run without targets follows the lesioned decode, not the plain one.
    assert run_with_trace(tiny_memory, SOURCES, names=["logits"], interventions=lesion, max_new_tokens=12).target_ids == decoded
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
