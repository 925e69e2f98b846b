"""Figures of the Focus page: one [output tokens x source tokens] map per
view (share of the attribution, attention weight), on one 0-1 scale so the
two ways of focusing compare by colour."""

from __future__ import annotations

import plotly.graph_objects as go

from app.figures.attention import axis_labels


def focus_map(values: list[list[float]], outputs: list[str], sources: list[str], title: str) -> go.Figure:
    """values [outputs, sources] in 0..1; rows are the output tokens, top to bottom."""
    figure = go.Figure(
        go.Heatmap(
            z=values, x=axis_labels(sources), y=axis_labels(outputs), zmin=0, zmax=1, colorscale="Blues",
            hovertemplate="output %{y}<br>source %{x}<br>%{z:.3f}<extra></extra>",
        )
    )  # fmt: skip
    figure.update_xaxes(type="category", tickangle=-45)
    figure.update_yaxes(type="category", autorange="reversed")
    figure.update_layout(
        title=title,
        height=max(300, 22 * len(outputs) + 160),
        margin={"l": 120, "r": 10, "t": 50, "b": 100},
    )
    return figure
