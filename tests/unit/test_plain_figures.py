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
