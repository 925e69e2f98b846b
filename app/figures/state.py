"""Figures of the State page: the state at one step as a heatmap per map
group, and [steps x positions] grids (update gate, reset gate, the state's
change per step, the output tape) with the shown step marked by a line that
static/state.js moves as the slider plays."""

from __future__ import annotations

from app.figures.attention import axis_labels
from app.figures.plain import PlainFigure, axis_ref, colorscale, subplot_layout
from app.figures.plain import figure as plain_figure
from inference.analyses.state import StateSteps

STEP_LINE = {"color": "#d62728", "width": 2}
STEP_MARK = "step-line"  # the name of the shape state.js moves


def step_labels(steps: StateSteps) -> list[str]:
    return [f"{stack} step {step}" for step, stack in zip(steps.steps, steps.stacks)]


def state_at_step(steps: StateSteps, shown: int) -> PlainFigure:
    """One heatmap per map group, [width rows x length positions], on one colour scale for every step."""
    groups = steps.map_groups
    low, high = steps.state_range
    bound = max(abs(low), abs(high)) or 1.0
    titles = [f"maps {a}–{b - 1} (mean)" for a, b in groups]
    layout = subplot_layout(len(groups), 1, titles, 0.2, 0.04, shared_xaxes=True)
    x = axis_labels(steps.positions)
    data = []
    for g, group in enumerate(steps.state[shown]):  # group: [width, length]
        xaxis, yaxis = axis_ref(g)
        data.append({
            "type": "heatmap", "z": group, "x": x, "y": [f"row {r}" for r in range(len(group))], "zmin": -bound,
            "zmax": bound, "colorscale": colorscale("RdBu"), "reversescale": True, "showscale": g == 0,
            "hovertemplate": "%{x}, %{y}: %{z:.3f}<extra></extra>", "xaxis": xaxis, "yaxis": yaxis,
        })  # fmt: skip
        layout[f"xaxis{xaxis[1:]}"]["type"] = "category"
        layout[f"yaxis{yaxis[1:]}"]["autorange"] = "reversed"
    layout.update(
        title={"text": f"State after {step_labels(steps)[shown]}"},
        height=110 * len(groups) + 90,
        margin={"l": 60, "r": 10, "t": 60, "b": 40},
    )
    return plain_figure(data, layout)


def step_grid(values: list, steps: StateSteps, title: str, colour: str, shown: int, zrange=None) -> PlainFigure:
    """A [steps x positions] grid with the shown step outlined."""
    y = step_labels(steps)[: len(values)]
    heatmap = {
        "type": "heatmap", "z": values, "x": axis_labels(steps.positions), "y": y, "colorscale": colorscale(colour),
        "hovertemplate": "%{y}, %{x}: %{z:.3f}<extra></extra>",
        **({"zmin": zrange[0], "zmax": zrange[1]} if zrange else {}),
    }  # fmt: skip
    layout = {
        "title": {"text": title},
        "height": max(260, 16 * len(y) + 120),
        "margin": {"l": 130, "r": 10, "t": 50, "b": 40},
        "shapes": [step_mark(shown, len(steps.positions))] if shown < len(values) else [],
        "xaxis": {"type": "category"},
        "yaxis": {"type": "category", "autorange": "reversed"},
    }
    return plain_figure([heatmap], layout)


def step_mark(shown: int, length: int) -> dict:
    return {
        "type": "rect", "name": STEP_MARK, "xref": "x", "yref": "y",
        "x0": -0.5, "x1": length - 0.5, "y0": shown - 0.5, "y1": shown + 0.5, "line": STEP_LINE,
    }  # fmt: skip


def state_figures(steps: StateSteps, shown: int) -> dict[str, PlainFigure]:
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
