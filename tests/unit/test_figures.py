"""Attention figures of a long real input: every token labelled, and the
per-head autoscale puts the top of each colour scale at that head's largest
weight."""

from __future__ import annotations

import numpy as np
import pytest

from app.figures.attention import MIN_CELL_PX, attention_heatmap, axis_labels, head_grid
from app.figures.memory import words_in_memory_chart
from inference.analyses.attention import layer_attention
from inference.core.checkpoint import load_checkpoint
from inference.core.tracing import run_with_trace
from tests.conftest import LONG_TEXT


@pytest.fixture(scope="module")
def view():
    """Layer 3 of the encoder of the shipped memtransformer_10 on a 100+-token input: [heads, q, k] weights."""
    trace = run_with_trace(load_checkpoint("checkpoints/memtransformer_10"), LONG_TEXT, names=["*.pattern"])
    view = layer_attention(trace, "encoder.attn", 3)
    assert len(view.key_tokens) > 100
    return view


def percent_max(weights) -> int:
    """The largest weight of one head in whole percent, at least 1: what its colour scale should top at."""
    return max(1, int(np.rint(float(weights.max()) * 100)))


def test_autoscale_tops_each_heads_scale_at_its_largest_weight(view):
    heads = view.weights.shape[0]
    expected = [percent_max(view.weights[h]) for h in range(heads)]
    assert min(expected) < 50, "some head must be weak for the autoscale to matter"
    for head in range(heads):
        assert attention_heatmap(view, head)["data"][0]["zmax"] == 100
        heatmap = attention_heatmap(view, head, autoscale=True)["data"][0]
        assert heatmap["zmax"] == expected[head]
        assert heatmap["colorbar"]["title"]["text"] == "% (head max)"
    assert [trace["zmax"] for trace in head_grid(view, autoscale=True)["data"]] == expected
    assert [trace["zmax"] for trace in head_grid(view)["data"]] == [100] * heads


def test_long_input_heatmap_labels_every_token_and_grows(view):
    figure = attention_heatmap(view, 0)
    heatmap, layout = figure["data"][0], figure["layout"]
    assert list(heatmap["x"]) == axis_labels(view.key_tokens)
    assert list(heatmap["y"]) == axis_labels(view.query_tokens)
    assert layout["xaxis"]["dtick"] == 1 and layout["yaxis"]["dtick"] == 1  # Plotly may not thin out the labels
    rows, columns = len(view.query_tokens), len(view.key_tokens)
    margin = layout["margin"]
    assert layout["height"] - margin["t"] - margin["b"] >= MIN_CELL_PX * rows
    assert layout["width"] - margin["l"] - margin["r"] >= MIN_CELL_PX * columns


def rates(p):
    return {"n_sentences": 3, "n_pairs": 8, "p_in_memory": p, "mean_sentence_p": p, "share_sentences_with_any": p}


@pytest.mark.parametrize(
    ("p", "note"),
    [
        (0.0, "no keyword or content word of any translation is in its memory"),
        (None, "no translation has a keyword or content word to look for"),
    ],
)
def test_an_empty_words_in_memory_chart_says_why(p, note):
    keywords = {"top": 3, "matched": rates(p), "rotated_baseline": rates(p)}
    figure = words_in_memory_chart(keywords, {"matched": rates(p), "rotated_baseline": rates(p)})
    assert [a.text for a in figure.layout.annotations] == [note]


def test_a_words_in_memory_chart_with_bars_has_no_note():
    keywords = {"top": 3, "matched": rates(0.125), "rotated_baseline": rates(0.0)}
    figure = words_in_memory_chart(keywords, {"matched": rates(0.1), "rotated_baseline": rates(0.0)})
    assert not figure.layout.annotations and list(figure.data[0].y) == [0.125, 0.1]
