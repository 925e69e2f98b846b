"""The plain-dict figures the live routes redraw (app/figures/plain.py) serialise as Plotly's graph objects would:
the same grid of eight heads built here with make_subplots and go.Heatmap gives the same traces, panel titles,
axis domains and anchors, and the same template."""

from __future__ import annotations

import base64
import json

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.figures.attention import COLORSCALE, axis_labels, head_grid, quantize_percent
from app.figures.plain import plain_json
from app.figures.segments import PROBE_GREENS, PROBE_TEXT, probe_figure
from inference.analyses.attention import LayerAttention
from inference.core.trace import Role

HEADS, QUERIES, KEYS = 8, 5, 7


def view() -> LayerAttention:
    weights = torch.rand(HEADS, QUERIES, KEYS, generator=torch.Generator().manual_seed(0)).softmax(-1)
    tokens = [f"t{i}" for i in range(KEYS)]
    return LayerAttention("encoder.attn", 0, weights, tokens[:QUERIES], tokens, [Role.SRC] * QUERIES, [Role.SRC] * KEYS)


def graph_object_grid(attention: LayerAttention) -> go.Figure:
    """The grid as graph objects build it (the route's figure before it was built as a plain dict)."""
    figure = make_subplots(rows=2, cols=4, subplot_titles=[f"head {h}" for h in range(HEADS)],
                           horizontal_spacing=0.03, vertical_spacing=0.08)  # fmt: skip
    x, y = axis_labels(attention.key_tokens), axis_labels(attention.query_tokens)
    for h in range(HEADS):
        figure.add_trace(
            go.Heatmap(z=quantize_percent(attention.weights[h]), x=x, y=y, zmin=0, zmax=100, colorscale=COLORSCALE,
                       showscale=False,
                       hovertemplate=f"head {h}<br>query %{{y}}<br>key %{{x}}<br>weight %{{z}}%<extra></extra>"),
            row=h // 4 + 1, col=h % 4 + 1,
        )  # fmt: skip
    figure.update_xaxes(showticklabels=False, type="category")
    figure.update_yaxes(showticklabels=False, autorange="reversed", type="category")
    return figure


def test_a_plain_grid_serialises_as_the_graph_objects_would():
    attention = view()
    plain = json.loads(plain_json(head_grid(attention)))
    objects = json.loads(graph_object_grid(attention).to_json())
    assert len(plain["data"]) == len(objects["data"]) == HEADS
    for ours, theirs in zip(plain["data"], objects["data"]):
        assert ours == theirs
    for axis in ("xaxis", "xaxis2", "xaxis8", "yaxis", "yaxis5", "yaxis8"):
        assert plain["layout"][axis] == objects["layout"][axis], axis
    assert plain["layout"]["annotations"] == objects["layout"]["annotations"]
    assert plain["layout"]["template"] == objects["layout"]["template"]
    z = np.frombuffer(base64.b64decode(plain["data"][3]["z"]["bdata"]), dtype=np.uint8)
    assert z.reshape(QUERIES, KEYS).tolist() == quantize_percent(attention.weights[3]).tolist()


def test_the_memory_probe_map_serialises_as_the_graph_objects_would():
    """The Segments page's probe map, a plain dict, against the same map built with go.Heatmap (the route's figure
    before): the same trace, title, size, margins and axes; segment 9 asked of a 2-segment probe says so."""
    probe = {
        "per_slot": [[[0.5, 0.25, 1.0], [0.0, 0.75, 0.5]], [[1.0, 1.0, 0.5], [0.25, 0.5, 0.75]]],
        "all_slots": [[0.75, 0.5, 1.0], [1.0, 1.0, 1.0]],
        "chance": [0.125, 0.125, 0.125],
        "samples": {"train": 60, "val": 20, "test": 20},
    }
    plain = json.loads(plain_json(probe_figure(probe, 9)))
    objects = go.Figure(
        go.Heatmap(
            z=np.asarray([[1.0, 1.0, 0.5], [0.25, 0.5, 0.75], [1.0, 1.0, 1.0], [0.125, 0.125, 0.125]]),
            x=["0", "1", "2"], y=["slot 0", "slot 1", "all slots", "chance"], zmin=0, zmax=1,
            colorscale=PROBE_GREENS, xgap=1, ygap=1, colorbar={"title": {"text": "accuracy"}},
            texttemplate="%{z:.2f}", textfont=PROBE_TEXT,
            hovertemplate="%{y} reads source position %{x}: %{z:.2f}<extra></extra>",
        )
    )  # fmt: skip
    objects.update_layout(
        title="What the memory holds after segment 1 (the last; segment 9 asked): linear probes, "
        "60 train / 20 val / 20 test samples",
        height=140 + 26 * 4, width=700, margin={"l": 10, "r": 10, "t": 60, "b": 40},
    )  # fmt: skip
    objects.update_xaxes(type="category", title_text="source position")
    objects.update_yaxes(type="category", autorange="reversed")
    assert plain == json.loads(objects.to_json())


def test_arrays_at_any_depth_become_typed_arrays_and_the_figure_keeps_its_own():
    marker = {"color": np.array([1, 2, 3]), "line": {"width": torch.tensor([0.5, 0.25])}}
    rows = [[0.5, 1.0], [0.25, 0.75]]
    trace = {"type": "heatmap", "z": rows, "marker": marker, "range": np.array([0, 1]), "name": "a"}
    encoded = json.loads(plain_json({"data": [trace], "layout": {"title": {"text": "t"}}}))["data"][0]
    assert encoded["marker"]["color"] == {"dtype": "i1", "bdata": "AQID"}  # int64 1, 2, 3 as int8 bytes 01 02 03
    width = encoded["marker"]["line"]["width"]  # float32 0.5, 0.25 little-endian: 00 00 00 3f, 00 00 80 3e
    assert width == {"dtype": "f4", "bdata": base64.b64encode(bytes.fromhex("0000003f0000803e")).decode()}
    assert encoded["z"] == rows and encoded["range"] == [0, 1] and encoded["name"] == "a"  # lists and skipped keys
    assert isinstance(trace["marker"]["color"], np.ndarray) and isinstance(marker["line"]["width"], torch.Tensor)
