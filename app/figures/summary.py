"""A figure in words, for readers who cannot see it (a screen reader reads it beside the plot): its title and,
per trace, where its largest value is."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import plotly.graph_objects as go

MAX_TRACES = 4  # traces summarised; a grid of small multiples names its first few and counts the rest


def plain_text(text: str | None) -> str:
    """Plotly title text without its HTML tags."""
    return " ".join(re.sub(r"<[^>]+>", " ", text or "").split())


def number(value: float) -> str:
    return f"{value:.3g}"


def label(labels, i: int) -> str:
    """The axis label at position i, or the position itself where the axis has none."""
    return str(labels[i]) if labels is not None and i < len(labels) else str(i)


def field(item: Any, name: str) -> Any:
    """A property of a graph object or of a plain figure's dict."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def trace_peak(trace: Any) -> str | None:
    """Where one trace's largest value is, in words; None for a trace without values."""
    name = f"{field(trace, 'name')}: " if field(trace, "name") else ""
    if field(trace, "type") == "heatmap":  # a graph object's type is a property too
        z_values = field(trace, "z")
        if z_values is None:
            return None
        z = np.asarray(z_values, dtype=float)
        if z.size == 0 or np.isnan(z).all():
            return None
        row, column = (int(i) for i in np.unravel_index(np.nanargmax(z), z.shape))
        return (
            f"{name}largest {number(z[row, column])} at row {label(field(trace, 'y'), row)}, "
            f"column {label(field(trace, 'x'), column)}"
        )
    values = field(trace, "y")
    if values is None or not len(values):
        return None
    y = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    if np.isnan(y).all():
        return None
    i = int(np.nanargmax(y))
    return f"{name}largest {number(y[i])} at {label(field(trace, 'x'), i)}"


def figure_summary(figure: go.Figure | dict[str, Any]) -> str:
    """E.g. "encoder.attn layer 0 head 0. largest 87 at row 3 [mem3], column 15 Wiese."."""
    data, layout = (figure["data"], figure["layout"]) if isinstance(figure, dict) else (figure.data, figure.layout)
    peaks = [peak for peak in map(trace_peak, data[:MAX_TRACES]) if peak]
    more = len(data) - MAX_TRACES
    annotations = field(layout, "annotations") or []
    notes = [
        field(a, "text")
        for a in annotations
        if field(a, "text") and field(a, "showarrow") is False and field(a, "xref") == "paper"
    ]
    title = field(layout, "title")
    parts = [plain_text(field(title, "text") if title is not None else None) or "Figure", *peaks, *notes[:1]]
    if more > 0:
        parts.append(f"and {more} more panels")
    return ". ".join(parts) + "."
