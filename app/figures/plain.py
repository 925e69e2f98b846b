"""Figures built as the plain dict Plotly.js reads, for the views live routes redraw on every request.

Plotly's graph objects validate every property they are given: a grid of eight heatmaps costs about 35 ms to
build on a 2-core machine (make_subplots alone 19 ms), a plain dict of the same figure about 1 ms. The dicts here
are what the graph objects would serialise: the same traces, the subplot grid's layout as make_subplots lays it
out (computed once per grid shape), and the default template, so a page draws them exactly as before.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import plotly.io as pio
from _plotly_utils.utils import is_skipped_key, to_typed_array_spec
from plotly.colors import get_colorscale
from plotly.subplots import make_subplots

PlainFigure = dict[str, Any]  # {"data": [trace dicts], "layout": {...}}; numpy arrays as they are until serialised


@cache
def default_template() -> dict[str, Any]:
    """The default template, as a graph object figure carries it in its layout."""
    return pio.templates[pio.templates.default].to_plotly_json()


@cache
def _grid(
    rows: int, cols: int, panels: int, horizontal_spacing: float, vertical_spacing: float, shared_xaxes: bool
) -> dict[str, Any]:
    """make_subplots' layout of a grid with `panels` titled panels (their titles empty): axis domains and anchors,
    and one title annotation a panel."""
    layout = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[" "] * panels,
        horizontal_spacing=horizontal_spacing,
        vertical_spacing=vertical_spacing,
        shared_xaxes=shared_xaxes,
    ).layout.to_plotly_json()
    layout.pop("template", None)
    return layout


def subplot_layout(
    rows: int,
    cols: int,
    titles: list[str],
    horizontal_spacing: float,
    vertical_spacing: float,
    shared_xaxes: bool = False,
) -> dict[str, Any]:
    """A grid's layout as make_subplots makes it, its panels titled `titles` (row by row)."""
    layout = copied(_grid(rows, cols, len(titles), horizontal_spacing, vertical_spacing, shared_xaxes))
    for annotation, title in zip(layout["annotations"], titles):
        annotation["text"] = title
    return layout


def copied(value: Any) -> Any:
    """A copy of nested dicts and lists, each new (what a caller may change), their values shared (a layout's
    strings, numbers and tuples, none of which can change): a grid of 8 panels' layout in 32 µs, where
    copy.deepcopy took 82."""
    if isinstance(value, dict):
        return {key: copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copied(item) for item in value]
    return value


@cache
def colorscale(name: str) -> list[list[Any]]:
    """A named colour scale as graph objects spell it out ([[0.0, "rgb(...)"], ...]): Plotly.js's scales of the
    same name differ."""
    return [list(stop) for stop in get_colorscale(name)]


def axis_ref(panel: int) -> tuple[str, str]:
    """The x and y axis names of grid panel `panel` (0-based, row by row): ("x", "y"), ("x2", "y2"), ..."""
    suffix = "" if panel == 0 else str(panel + 1)
    return f"x{suffix}", f"y{suffix}"


def figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> PlainFigure:
    """A plain figure of `data` traces (each with its "type") and `layout`, the default template added."""
    return {"data": data, "layout": {**layout, "template": default_template()}}


def plain_json(plain: PlainFigure) -> str:
    """The figure's JSON, numpy arrays as Plotly's typed arrays (base64), as graph objects serialise them."""
    data = [typed_arrays(trace) for trace in plain["data"]]
    return pio.json.to_json_plotly({"data": data, "layout": plain["layout"]})


def typed_arrays(value: Any) -> Any:
    """A copy of `value` (a trace) with every array a dict holds, at any depth, as Plotly's typed array spec, as
    Plotly's own conversion gives it; the figure keeps its arrays (its summary reads them). Plotly's walks every
    value of every list; only a list of dicts (e.g. a parallel plot's dimensions) is walked here, and a list of
    values (a heatmap's rows of numbers) is left whole (a State answer's four figures: 0.6 ms to walk value by
    value)."""
    if isinstance(value, dict):
        encoded: dict[str, Any] = {}
        for key, item in value.items():
            if is_skipped_key(key):
                encoded[key] = item
            else:
                array = _array(item)
                encoded[key] = typed_arrays(item) if array is None else to_typed_array_spec(array)
        return encoded
    if isinstance(value, list | tuple) and value and isinstance(value[0], dict):
        return [typed_arrays(item) for item in value]
    return value


def _array(value: Any) -> np.ndarray | None:
    """What Plotly encodes as a typed array, as numpy: a numpy array, or what converts to one of at least one axis
    (a tensor read through numpy once: Plotly's own reading of one is deprecated by numpy); None for anything else."""
    if isinstance(value, np.ndarray):
        return value
    if not hasattr(value, "__array__"):
        return None
    array = np.asarray(value)
    return array if array.shape != () else None  # a numpy scalar is no array
