"""A figure in words: its title and where each trace's largest value is, read off values set by hand."""

from __future__ import annotations

import plotly.graph_objects as go

from app.figures.summary import figure_summary


def test_a_heatmap_names_its_largest_cell_by_its_labels():
    figure = go.Figure(go.Heatmap(z=[[1, 5], [3, 2]], x=["Ein", "Hund"], y=["[mem0]", "[mem1]"]))
    figure.update_layout(title="encoder.attn <b>layer 0</b> head 0")
    assert figure_summary(figure) == "encoder.attn layer 0 head 0. largest 5 at row [mem0], column Hund."


def test_bars_name_each_trace_and_skip_empty_ones():
    figure = go.Figure(
        [go.Bar(x=["keywords", "content"], y=[0.125, 0.75], name="own memory"), go.Bar(x=[], y=[], name="empty")]
    )
    figure.update_layout(title="Words in memory")
    assert figure_summary(figure) == "Words in memory. own memory: largest 0.75 at content."


def test_a_grid_counts_the_panels_it_does_not_name():
    figure = go.Figure([go.Heatmap(z=[[i]]) for i in range(6)])
    assert figure_summary(figure) == (
        "Figure. largest 0 at row 0, column 0. largest 1 at row 0, column 0. largest 2 at row 0, column 0. "
        "largest 3 at row 0, column 0. 2 more panels not described here."
    )


def test_a_grid_names_each_panel_by_its_subplot_title_and_ends_in_a_sentence():
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=1, cols=5, subplot_titles=["update", "reset", "state", "change", "tape"])
    for i in range(5):
        figure.add_trace(go.Heatmap(z=[[0, i + 1]], x=["a", "b"], y=["s0"]), row=1, col=i + 1)
    figure.update_layout(title="Gates")
    assert figure_summary(figure) == (
        "Gates. update: largest 1 at row s0, column b. reset: largest 2 at row s0, column b. "
        "state: largest 3 at row s0, column b. change: largest 4 at row s0, column b. "
        "1 more panel not described here."
    )


def test_escaped_labels_read_as_the_tokens_they_are():
    """Plotly renders labels as HTML, so the figures escape a token such as <eos>; the summary (escaped once more
    by the page's template) must read "<eos>", not "&lt;eos&gt;"."""
    figure = go.Figure(go.Heatmap(z=[[1, 5]], x=["&lt;|im_start|&gt;", "&quot;Hi&quot;"], y=["&lt;eos&gt;"]))
    figure.update_layout(title="attn &amp; memory")
    assert figure_summary(figure) == 'attn & memory. largest 5 at row <eos>, column "Hi".'
