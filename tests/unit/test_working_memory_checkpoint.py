"""Forced memory on the shipped German-English working-memory checkpoint:
the typed words are exactly the memory, written before the translation,
and the translation is the model's greedy reading of that stream."""

from __future__ import annotations

import pytest

from inference.core.checkpoint import load_checkpoint
from inference.core.interventions import Interventions
from inference.core.places import REPO_ROOT
from inference.core.tracing import encode_sources
from inference.families.working_memory.generation import wm_generate
from inference.families.working_memory.lesions import ForceMemory
from tests.unit.test_working_memory import greedy_after_its_stream

NO_MEMORY = "Ein Hund rennt mit einem Ball im Maul über die Wiese."  # writes no memory with seed 0
FULL_MEMORY = "Ein Mann telefoniert in einem unaufgeräumten Büro."  # fills its 10 memory tokens with seed 0


@pytest.fixture(scope="module")
def german():
    return load_checkpoint(REPO_ROOT / "checkpoints" / "working_memory_de_en", device="cpu")


def generate(loaded, text: str, interventions: Interventions | None = None):
    src = encode_sources(loaded, [text])  # [1, n]
    return src, wm_generate(loaded.model, src, interventions, seed=0).examples[0]


@pytest.mark.parametrize(("text", "plain_memory"), [(NO_MEMORY, 0), (FULL_MEMORY, 10)])
def test_forced_words_are_the_whole_memory_and_the_translation_reads_them(german, text, plain_memory):
    _, plain = generate(german, text)
    assert len(plain.memory) == plain_memory
    forced = tuple(i for word in ("Katze", "beach") for i in german.tokenizer.encode(word))
    src, example = generate(german, text, Interventions.of(ForceMemory(tokens=forced)))
    assert example.memory == list(forced)
    assert example.types[: len(forced)] == [0] * len(forced) and set(example.types[len(forced) :]) == {1}
    assert greedy_after_its_stream(german.model, src, example)
    assert example.translation != plain.translation  # the forced memory changes what is translated
