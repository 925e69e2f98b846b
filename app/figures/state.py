"""Figures of the State page: the state at one step as a heatmap per map
group, and [steps x positions] grids (update gate, reset gate, the state's
change per step, the output tape) with the shown step marked by a line that
static/state.js moves as the slider plays."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.attention import axis_labels
from inference.analyses.state import StateSteps

STEP_LINE = {"color": "#d62728", "width": 2}
STEP_MARK = "step-line"  # the name of the shape state.js moves


def step_labels(steps: StateSteps) -> list[str]:
    return [f"{stack} step {step}" for step, stack in zip(steps.steps, steps.stacks)]


def state_at_step(steps: StateSteps, shown: int) -> go.Figure:
    """One heatmap per map group, [width rows x length positions], on one colour scale for every step."""
    groups = steps.map_groups
    low, high = steps.state_range
    bound = max(abs(low), abs(high)) or 1.0
    figure = make_subplots(
        rows=len(groups), cols=1, shared_xaxes=True, vertical_spacing=0.04,
        subplot_titles=[f"maps {a}–{b - 1} (mean)" for a, b in groups],
    )  # fmt: skip
    x = axis_labels(steps.positions)
    for g, group in enumerate(steps.state[shown]):  # group: [width, length]
        figure.add_trace(
            go.Heatmap(
                z=group, x=x, y=[f"row {r}" for r in range(len(group))], zmin=-bound, zmax=bound,
                colorscale="RdBu", reversescale=True, showscale=g == 0,
                hovertemplate="%{x}, %{y}: %{z:.3f}<extra></extra>",
            ),
            row=g + 1, col=1,
        )  # fmt: skip
    figure.update_xaxes(type="category")
    figure.update_yaxes(autorange="reversed")
    figure.update_layout(
        title=f"State after {step_labels(steps)[shown]}",
        height=110 * len(groups) + 90,
        margin={"l": 60, "r": 10, "t": 60, "b": 40},
    )
    return figure


def step_grid(values: list, steps: StateSteps, title: str, colour: str, shown: int, zrange=None) -> go.Figure:
    """A [steps x positions] grid with the shown step outlined."""
    y = step_labels(steps)[: len(values)]
    figure = go.Figure(
        go.Heatmap(
            z=values, x=axis_labels(steps.positions), y=y, colorscale=colour,
            zmin=zrange[0] if zrange else None, zmax=zrange[1] if zrange else None,
            hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>",
        )
    )  # fmt: skip
    figure.update_xaxes(type="category")
    figure.update_yaxes(type="category", autorange="reversed")
    figure.update_layout(
        title=title,
        height=max(260, 16 * len(y) + 120),
        margin={"l": 130, "r": 10, "t": 50, "b": 40},
        shapes=[step_mark(shown, len(steps.positions))] if shown < len(values) else [],
    )
    return figure


def step_mark(shown: int, length: int) -> dict:
    return {
        "type": "rect", "name": STEP_MARK, "xref": "x", "yref": "y",
        "x0": -0.5, "x1": length - 0.5, "y0": shown - 0.5, "y1": shown + 0.5, "line": STEP_LINE,
    }  # fmt: skip


def state_figures(steps: StateSteps, shown: int) -> dict[str, go.Figure]:
    """Every figure of the page, the step `shown` marked."""
    change = "Change of the state per step (L2 over maps and rows)"
    reset = "Reset gate (share of the state the candidate reads)"
    figures = {
        "state": state_at_step(steps, shown),
        "change": step_grid(steps.change, steps, change, "Viridis", shown),
        "update": step_grid(steps.update, steps, "Update gate (1: keep the old state)", "Blues", shown, (0, 1)),
        "reset": step_grid(steps.reset, steps, reset, "Greens", shown, (0, 1)),
    }
    if steps.tape is not None:
        decoder_from = steps.stacks.index("decoder")
        tape = [[0.0] * len(steps.positions)] * decoder_from + steps.tape  # the encoder steps have no tape
        figures["tape"] = step_grid(
            tape,
            steps,
            "Output tape read by each decoder step (L2 of the embeddings written before it)",
            "Purples",
            shown,
        )
    return figures
