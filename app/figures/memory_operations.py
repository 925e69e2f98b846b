"""Plotly figure of the memory operation of every head of one attention
stack: a layer x head grid, each cell coloured by its label and annotated
with the label and that operation's share; hover shows all four shares and
their lifts over uniform attention. Nothing here computes an analysis."""

from __future__ import annotations

import numpy as np

from app.figures.plain import PlainFigure
from app.figures.plain import figure as plain_figure
from inference.analyses.memory_operations import LABELS, LIFT_THRESHOLD, OPERATIONS, HeadOperations

# Light bands under dark text (LABEL_TEXT): every label reads at 10:1 or more (WCAG AA asks 4.5:1).
LABEL_COLORS = {
    "write": "#f4a6a6",
    "read": "#a6c8f0",
    "rewrite": "#cdb6e8",
    "process": "#b5e0b0",
    "mixed": "#f5c99b",
    "none": "#eeeeee",
}
LABEL_TEXT = "#111111"


def label_colorscale() -> list[tuple[float, str]]:
    """A colour scale of one flat band per label, for label indices 0..len(LABELS)-1."""
    bands = len(LABELS)
    scale = []
    for i, label in enumerate(LABELS):
        scale += [(i / bands, LABEL_COLORS[label]), ((i + 1) / bands, LABEL_COLORS[label])]
    return scale


def cell_text(head: HeadOperations) -> str:
    """The label, and the operation's share where the label is an operation."""
    return f"{head.label}<br>{head.share[head.label]:.0%}" if head.label in OPERATIONS else head.label


def memory_operations_grid(heads: list[HeadOperations], stack: str) -> PlainFigure:
    """Layer x head grid of the heads of `stack` (layer 0 on top)."""
    chosen = [h for h in heads if h.stack == stack]
    if not chosen:
        raise ValueError(f"no head of {stack} among the memory operations")
    layers = max(h.layer for h in chosen) + 1
    n_heads = max(h.head for h in chosen) + 1
    z = np.full((layers, n_heads), LABELS.index("none"), dtype=np.uint8)  # label index per cell
    text = np.full((layers, n_heads), "", dtype=object)
    hover = np.full((layers, n_heads), "", dtype=object)
    for h in chosen:
        z[h.layer, h.head] = LABELS.index(h.label)
        text[h.layer, h.head] = cell_text(h)
        hover[h.layer, h.head] = "<br>".join(
            f"{op} {h.share[op]:.0%} (uniform {h.uniform[op]:.0%}, lift {h.lift[op]:+.2f})" for op in OPERATIONS
        )
    heatmap = {
        "type": "heatmap",
        "z": z,
        "x": [f"h{head}" for head in range(n_heads)],
        "y": [f"L{layer}" for layer in range(layers)],
        "zmin": -0.5,
        "zmax": len(LABELS) - 0.5,
        "colorscale": [list(stop) for stop in label_colorscale()],
        "colorbar": {"tickvals": list(range(len(LABELS))), "ticktext": list(LABELS), "title": {"text": "label"}},
        "text": text.tolist(),
        "texttemplate": "%{text}",
        "textfont": {"color": LABEL_TEXT},
        "customdata": hover.tolist(),
        "xgap": 2,
        "ygap": 2,
        "hovertemplate": "%{y} %{x}<br>%{customdata}<extra></extra>",
    }
    layout = {
        "title": {
            "text": f"{stack}: memory operation per head (label where its lift over uniform attention is at least "
            f"{LIFT_THRESHOLD})"
        },
        "height": 80 + 48 * layers,
        "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
        "xaxis": {"side": "top", "type": "category"},
        "yaxis": {"autorange": "reversed", "type": "category"},
    }
    return plain_figure([heatmap], layout)
