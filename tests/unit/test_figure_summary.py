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
        "largest 3 at row 0, column 0. and 2 more panels."
    )
