"""A figure in words, for readers who cannot see it (a screen reader reads it beside the plot): its title and,
per trace, where its largest value is."""

from __future__ import annotations

import html
import re
from typing import Any

import numpy as np
import plotly.graph_objects as go

MAX_TRACES = 4  # traces summarised; a grid of small multiples names its first few and counts the rest


def plain_text(text: str | None) -> str:
    """Plotly text (HTML: tags, and entities such as &lt; for a token "<eos>") as the plain text a reader sees."""
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", text or "").split()))


def number(value: float) -> str:
    return f"{value:.3g}"


def label(labels, i: int) -> str:
    """The axis label at position i as a reader sees it, or the position itself where the axis has none."""
    return plain_text(str(labels[i])) if labels is not None and i < len(labels) else str(i)


def field(item: Any, name: str) -> Any:
    """A property of a graph object or of a plain figure's dict."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def trace_peak(trace: Any, panel: str | None = None) -> str | None:
    """Where one trace's largest value is, in words, named by its panel (a subplot's title) or its own name;
    None for a trace without values."""
    named = panel or field(trace, "name")
    name = f"{named}: " if named else ""
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
    """E.g. "encoder.attn layer 0 head 0. largest 87 at row 3 [mem3], column 15 Wiese."; a grid of panels (one
    trace under each subplot title) names each panel it describes and counts the rest."""
    data, layout = (figure["data"], figure["layout"]) if isinstance(figure, dict) else (figure.data, figure.layout)
    annotations = field(layout, "annotations") or []
    notes = [
        plain_text(field(a, "text"))
        for a in annotations
        if field(a, "text") and field(a, "showarrow") is False and field(a, "xref") == "paper"
    ]
    panels = notes[: len(data)] if len(data) > 1 and len(notes) >= len(data) else []  # subplot titles, in order
    peaks = [
        peak for i, trace in enumerate(data[:MAX_TRACES]) if (peak := trace_peak(trace, panels[i] if panels else None))
    ]
    title = field(layout, "title")
    parts = [plain_text(field(title, "text") if title is not None else None) or "Figure", *peaks]
    if not panels:
        parts.extend(notes[:1])
    more = len(data) - MAX_TRACES
    if more > 0:
        parts.append(f"{more} more panel{'s' if more != 1 else ''} not described here")
    return ". ".join(parts) + "."
