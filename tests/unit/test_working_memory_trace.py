"""Tracing a working-memory model: its own generation, every decision, the
stream's roles, and the views built on the trace."""

from __future__ import annotations

import pytest
import torch

from inference.analyses.working_memory import (
    memory_tokens,
    require_working_memory,
    step_decisions,
    stream_tokens,
    target_to_memory_attention,
)
from inference.core.interventions import Interventions
from inference.core.tracing import encode_sources, run_with_trace
from inference.families.working_memory.lesions import MaskMemory
from tests.conftest import SOURCES, TINY_MEMORY, make_tiny_working_memory


@pytest.fixture
def keen(tiny_tokenizer):
    return make_tiny_working_memory(tiny_tokenizer, memory_bias=1.0)


def test_trace_holds_the_generation_and_its_decisions(keen):
    trace = run_with_trace(keen, SOURCES, seed=2)
    choices = require_working_memory(trace)  # [b, steps, 7]
    assert choices.shape[0] == 2 and choices.shape[2] == 7
    for example, stream in enumerate(trace.output_ids):
        kinds = [t.kind for t in stream_tokens(trace, example)]
        assert len(kinds) == len(stream) and 0 < kinds.count("memory") <= TINY_MEMORY
        decisions = step_decisions(trace, keen.tokenizer, example)
        assert [d.kind for d in decisions][: len(kinds)] == kinds  # the last decision may be the final EOS
        # Each decision's p_memory is the type head's memory probability before that element, as a
        # teacher-forced pass over the stream (BOS, then what was written) gives it.
        ids = torch.tensor([[keen.config.bos_id] + [d.token_id for d in decisions]])  # [1, 1 + t]
        types = torch.tensor([[1] + [0 if d.kind == "memory" else 1 for d in decisions]])  # 0 memory, 1 target
        with torch.no_grad():
            _, type_logits = keen.model(encode_sources(keen, [SOURCES[example]]), ids, types)  # [1, 1 + t, 2]
        expected = type_logits[0, :-1].softmax(dim=-1)[:, 0]  # [t]
        torch.testing.assert_close(torch.tensor([d.p_memory for d in decisions]), expected, atol=1e-5, rtol=0)
    assert [len(memory_tokens(trace, e)) for e in range(2)] == [int((choices[e, :, 2] == 0).sum()) for e in range(2)]


def test_masked_run_puts_no_target_attention_on_memory(keen):
    trace = run_with_trace(keen, SOURCES[0], interventions=Interventions.of(MaskMemory()), seed=2)
    for layer in range(2):
        attention = target_to_memory_attention(trace, layer)
        assert attention.weights.shape[2] == len(memory_tokens(trace)) > 0
        assert torch.all(attention.weights == 0)
    unmasked = target_to_memory_attention(run_with_trace(keen, SOURCES[0], seed=2), 0)
    assert unmasked.weights.sum() > 0


def test_a_given_target_is_refused(keen):
    with pytest.raises(ValueError, match="traced on its own output"):
        run_with_trace(keen, SOURCES[0], targets="a dog")
