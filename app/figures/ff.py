"""Plotly figures of the FF-memory study (paper 003) by layer, drawn from a
checkpoint's ff_analysis.json (training/studies/ff_keys.py). Nothing here computes
an analysis."""

from __future__ import annotations

import plotly.graph_objects as go

CASE_COLORS = {"residual_wins": "#2b6cb0", "ff_wins": "#d9822b", "all_agree": "#38a169", "composition": "#805ad5"}
CASE_NAMES = {
    "residual_wins": "residual wins",
    "ff_wins": "FF wins",
    "all_agree": "all agree",
    "composition": "composition",
}
LAYOUT = {"height": 340, "margin": {"l": 10, "r": 10, "t": 60, "b": 10}, "legend": {"orientation": "h", "y": -0.2}}


def layer_labels(records: list[dict]) -> list[str]:
    """'layers.3.ff' / 'decoder.layers.3.ff' -> 'layer 3'."""
    return [f"layer {record['layer'].split('.')[-2]}" for record in records]


def agreement_chart(analysis: dict) -> go.Figure:
    """Key-value agreement per layer beside its random-key baseline."""
    records = analysis["agreement"]
    x = layer_labels(records)
    figure = go.Figure()
    series = (
        ("agreement", "agreement: argmax p_i = w_i", "#2b6cb0", "solid"),
        ("baseline_agreement", "random keys' w (baseline)", "#888", "dash"),
        ("any_trigger_agreement", "argmax p_i = next token of any top-50 trigger", "#d9822b", "dot"),
    )
    for field, name, color, dash in series:
        figure.add_trace(
            go.Scatter(
                x=x,
                y=[r[field] for r in records],
                name=name,
                mode="lines+markers",
                line={"color": color, "dash": dash},
                hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    figure.update_layout(
        title="Key-value agreement by layer (share of keys with triggers)",
        yaxis={"title": "share of keys", "rangemode": "tozero"},
        **LAYOUT,
    )
    return figure


def cases_chart(analysis: dict) -> go.Figure:
    """How the residual and the FF output combine into each layer's prediction."""
    records = analysis["aggregation"]["layers"]
    x = layer_labels(records)
    figure = go.Figure()
    for case, color in CASE_COLORS.items():
        figure.add_trace(
            go.Bar(
                x=x,
                y=[r[case] for r in records],
                name=CASE_NAMES[case],
                marker_color=color,
                hovertemplate="%{x}: %{y:.3f}<extra>" + CASE_NAMES[case] + "</extra>",
            )
        )
    figure.update_layout(
        title="Layer prediction vs residual and FF output (share of predictions)",
        barmode="stack",
        yaxis={"title": "share of predictions", "range": [0, 1]},
        **LAYOUT,
    )
    return figure


def memories_chart(analysis: dict) -> go.Figure:
    """Zero agreement and the residual's agreement with the final output, by depth."""
    records = analysis["aggregation"]["layers"]
    x = layer_labels(records)
    figure = go.Figure(
        go.Bar(
            x=x,
            y=[r["mean_active_memories"] for r in records],
            name="active memories per prediction (right axis)",
            marker_color="#cbd5e0",
            opacity=0.6,
            yaxis="y2",
            hovertemplate="%{x}: %{y:.1f} keys<extra></extra>",
        )
    )  # behind the lines
    series = (
        ("zero_agreement", "no active memory's value points at the FF output's top token", "#d9822b"),
        ("residual_agrees_with_final", "the residual's top token is the model's final prediction", "#2b6cb0"),
    )
    for field, name, color in series:
        figure.add_trace(
            go.Scatter(
                x=x,
                y=[r[field] for r in records],
                name=name,
                mode="lines+markers",
                line={"color": color},
                hovertemplate="%{x}: %{y:.3f}<extra></extra>",
            )
        )
    figure.update_layout(
        title="Memories per prediction, zero agreement, residual = final prediction",
        yaxis={"title": "share of predictions", "range": [0, 1]},
        yaxis2={"title": "active keys", "overlaying": "y", "side": "right", "rangemode": "tozero", "showgrid": False},
        **LAYOUT,
    )
    return figure


def study_figures(analysis: dict) -> dict[str, go.Figure]:
    return {
        "ff-agreement": agreement_chart(analysis),
        "ff-cases": cases_chart(analysis),
        "ff-memories": memories_chart(analysis),
    }
