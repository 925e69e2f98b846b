"""A figure in words, for readers who cannot see it (a screen reader reads it beside the plot): its title and,
per trace, where its largest value is."""

from __future__ import annotations

import re

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


def trace_peak(trace) -> str | None:
    """Where one trace's largest value is, in words; None for a trace without values."""
    name = f"{trace.name}: " if getattr(trace, "name", None) else ""
    if isinstance(trace, go.Heatmap):
        if trace.z is None:
            return None
        z = np.asarray(trace.z, dtype=float)
        if z.size == 0 or np.isnan(z).all():
            return None
        row, column = (int(i) for i in np.unravel_index(np.nanargmax(z), z.shape))
        return f"{name}largest {number(z[row, column])} at row {label(trace.y, row)}, column {label(trace.x, column)}"
    values = getattr(trace, "y", None)
    if values is None or not len(values):
        return None
    y = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    if np.isnan(y).all():
        return None
    i = int(np.nanargmax(y))
    return f"{name}largest {number(y[i])} at {label(trace.x, i)}"


def figure_summary(figure: go.Figure) -> str:
    """E.g. "encoder.attn layer 0 head 0. largest 87 at row 3 [mem3], column 15 Wiese."."""
    peaks = [peak for peak in map(trace_peak, figure.data[:MAX_TRACES]) if peak]
    more = len(figure.data) - MAX_TRACES
    notes = [a.text for a in figure.layout.annotations if a.text and a.showarrow is False and a.xref == "paper"]
    parts = [plain_text(figure.layout.title.text) or "Figure", *peaks, *notes[:1]]
    if more > 0:
        parts.append(f"and {more} more panels")
    return ". ".join(parts) + "."
