"""Choosing the Working memory page's example sentences by measuring
(training.studies.memory_examples) on a tiny model."""

from __future__ import annotations

from inference.core.interventions import Interventions, MemorySize
from inference.core.tracing import encode_sources
from inference.families.working_memory.generation import wm_generate
from tests.conftest import SOURCES, make_tiny_working_memory
from training.studies.memory_examples import Measured, measure, pick, screen


def test_measure_runs_a_sentence_alone_as_the_page_does(tiny_tokenizer):
    loaded = make_tiny_working_memory(tiny_tokenizer)
    measured = measure(loaded, SOURCES[0], "a dog plays in the park")
    alone = wm_generate(loaded.model, encode_sources(loaded, [SOURCES[0]]), seed=0).examples[0]
    assert measured.memory_tokens == len(alone.memory) > 0 and measured.memory == tiny_tokenizer.display_tokens(
        alone.memory
    )
    no_memory = wm_generate(
        loaded.model, encode_sources(loaded, [SOURCES[0]]), Interventions.of(MemorySize(size=0)), seed=0
    ).examples[0]
    assert measured.no_memory == tiny_tokenizer.decode(no_memory.translation)


def test_screen_keeps_the_sentences_that_write_memory(tiny_tokenizer):
    assert screen(make_tiny_working_memory(tiny_tokenizer, memory_bias=5.0), SOURCES) == [0, 1]
    assert screen(make_tiny_working_memory(tiny_tokenizer, memory_bias=-20.0), SOURCES) == []


def test_pick_prefers_sentences_translated_right_then_those_the_lesions_change_then_short_ones():
    def sentence(source: str, memory: int, masked: str, no_memory: str, reference: str = "") -> Measured:
        return Measured(source, reference, memory, ["m"] * memory, "same", masked, no_memory)

    candidates = [
        sentence("one two three", 2, "same", "same"),
        sentence("none at all", 0, "other", "other"),
        sentence("both changed but long sentence", 1, "other", "other"),
        sentence("both changed", 3, "other", "another"),
        sentence("mask only", 1, "other", "same"),
    ]
    assert [m.source for m in pick(candidates, 3)] == ["both changed", "both changed but long sentence", "mask only"]
    right = sentence("right but unchanged and long", 1, "same", "same", reference="same")  # chrF 100
    nearly = sentence("nearly right", 1, "other", "other", reference="some")  # chrF of "same" against "some": 27
    assert nearly.chrf < 60 <= right.chrf
    assert [m.source for m in pick([*candidates, nearly, right], 2)] == ["right but unchanged and long", "both changed"]
