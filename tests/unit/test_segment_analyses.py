"""Segment analyses read by hand: next-token hits, where segments lie, what a
memory write attends to; and the task tables' mean, spread and seed count."""

from __future__ import annotations

import statistics

import torch

from inference.analyses.segments import memory_path, next_token_hits, segment_spans
from inference.core.family import LoadedModel
from inference.core.tokenizer import character_tokenizer
from inference.core.tracing import run_with_trace
from tests.unit.test_recurrent_memory import tiny
from training.report.segment_tasks import grouped, task_table


def test_hits_are_scored_after_the_start_token_and_read_by_hand():
    ids = [5, 6, 7, 1, 5, 6, 7]  # source 5 6 7, <bos>, answer 5 6 7
    predicted = [0, 0, 0, 5, 9, 7, 0]  # the prediction after each position
    found = next_token_hits(ids, predicted, bos_id=1)
    assert found.scored_from == 4 and found.hits == [None] * 4 + [True, False, True]
    assert found.accuracy == 2 / 3
    plain = next_token_hits([5, 6, 7], [6, 0, 0], bos_id=1)  # no start token: every next token counts
    assert plain.hits == [None, True, False]


def test_segment_spans_and_the_memory_path_of_a_traced_run():
    tokenizer = character_tokenizer("abcdefghij")
    model = tiny(vocab_size=tokenizer.vocab_size)  # segments of 4 tokens, 2 memory slots
    trace = run_with_trace(LoadedModel("tiny", model, tokenizer), "abcdefghij", names=["layers.1.attn.pattern"])
    spans = segment_spans(trace, "layers.1.attn.pattern")
    assert spans.starts == [0, 4, 8] and spans.lengths == [4, 4, 2] and spans.of(9) == 2
    path = memory_path(trace, "layers.1.attn.pattern", 1, positions=10)
    assert path.rows == [(s, j) for s in range(3) for j in range(2)]
    pattern = trace.captures["layers.1.attn.pattern"].at(segment=1)[0].mean(dim=0)  # [q, k]: read 2, tokens 4, write 2
    expected = torch.zeros(13)
    expected[4:8] = pattern[6, 2:6]  # write slot 0 of segment 1 over the segment's tokens 4..7
    expected[10] = pattern[6, :2].sum()  # over the memory it read
    expected[11] = pattern[6, 6:].sum()  # and over the write block
    torch.testing.assert_close(path.weights[2], expected)
    torch.testing.assert_close(path.weights.sum(dim=1), torch.ones(6))  # every write row's mass is somewhere


def run(task, segments, carry, seed, accuracy):
    return {"task": task, "steps": 100, "segments": segments, "carry": carry, "seed": seed,
            "test": {"char_accuracy": accuracy}}  # fmt: skip


def test_the_task_table_gives_mean_spread_and_seeds_and_the_papers_figures():
    runs = [run("reverse", 6, "rmt", s, a) for s, a in ((1, 0.9), (2, 0.6), (3, 0.75))]
    runs += [run("reverse", 6, "xl", 3, 0.3), run("reverse", 6, "xl", 1, 0.5)]
    lines = task_table(grouped(dict(enumerate(runs))), "reverse", 100)
    spread = statistics.stdev([0.9, 0.6, 0.75])
    assert lines[2] == f"| 6 | - | 0.40 ± 0.14 (seeds 1, 3) | 0.75 ± {spread:.2f} (seeds 1-3) | 0.10 / 0.67 / 0.90 |"
