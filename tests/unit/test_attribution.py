"""Attribution onto source tokens and memory slots."""

import pytest

from inference.core.interventions import BlockMemoryReads, Interventions, MemorySize
from inference.runs.attribution import attribute
from tests.conftest import make_tiny

TEXT = "ein Hund spielt im Park"


def test_integrated_gradients_are_complete(tiny_memory):
    result = attribute(tiny_memory, TEXT, position=0, n_steps=64)
    assert len(result.integrated_gradients_source) == len(result.source_tokens) == len(result.saliency_source)
    assert len(result.integrated_gradients_memory) == len(result.memory_slots) == 3
    assert (
        result.convergence_delta
        < 0.05 * (abs(sum(result.integrated_gradients_source)) + abs(sum(result.integrated_gradients_memory)) + 1e-6)
        + 1e-3
    )
    assert any(v != 0 for v in result.saliency_memory)


def test_memory_that_nobody_reads_gets_no_attribution(tiny_tokenizer):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    blocked = attribute(loaded, TEXT, position=0, interventions=Interventions.of(BlockMemoryReads(stacks="both")))
    assert blocked.saliency_memory == [0.0] * 3 and blocked.integrated_gradients_memory == [0.0] * 3
    assert any(v != 0 for v in blocked.saliency_source)


def test_attribution_follows_memory_size(tiny_tokenizer):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    assert attribute(loaded, TEXT, 0, Interventions.of(MemorySize(size=7))).memory_slots == [
        f"[mem{j}]" for j in range(7)
    ]
    assert attribute(make_tiny("transformer", tiny_tokenizer), TEXT, 0).memory_slots == []


def test_position_past_the_translation_is_refused(tiny_tokenizer):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    with pytest.raises(ValueError, match="out of range"):
        attribute(loaded, TEXT, position=500)
