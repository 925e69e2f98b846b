"""Plotly figures from analysis data. Nothing here computes an analysis.

Heatmaps carry attention weights as uint8 whole percent (0-100): Plotly
ships uint8 numpy arrays as base64 binary, about 1 byte per cell instead of
~20 for a float in JSON text, which keeps a 256-token map responsive.
Tokens are escaped before they reach Plotly, whose labels accept a little
HTML.

The one-head heatmap grows with its input (every row and column at least
MIN_CELL_PX, every token labelled) and scrolls inside its container rather
than dropping labels; with autoscale each head's colour scale runs from 0 to
that head's own largest weight, so weak heads do not look empty.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.figures.plain import PlainFigure, axis_ref, colorscale, subplot_layout
from app.figures.plain import figure as plain_figure
from inference.analyses.attention import LayerAttention
from inference.analyses.blocks import BLOCKS, HeadBlocks
from inference.core.axes import AxisRole
from inference.core.trace import MEMORY_ROLES
from inference.runs.attribution import Attribution

COLORSCALE = "Blues"
MIN_CELL_PX, MAX_CELL_PX, MAP_PX = 16, 28, 700  # a heatmap cell's side: MAP_PX / tokens, within these bounds
CHAR_PX = 7  # width of one label character at Plotly's default 12 px font
# Block of (query is memory, key is memory), as in Memory Transformer, Figure 3.
BLOCK_NAMES = {(False, False): "update", (True, False): "write", (False, True): "read", (True, True): "process"}


def quantize_percent(weights) -> np.ndarray:
    """Attention weights in [0, 1] -> uint8 whole percent."""
    return np.rint(np.asarray(weights, dtype=np.float32) * 100).clip(0, 100).astype(np.uint8)


def axis_labels(tokens: list[str]) -> list[str]:
    """Unique, escaped category labels: '3 Hund' (repeated tokens stay apart)."""
    return [f"{i} {html.escape(token)}" for i, token in enumerate(tokens)]


def memory_span(roles: Sequence[str]) -> tuple[int, int] | None:
    """(first, last) index of memory positions, if any."""
    indices = [i for i, r in enumerate(roles) if r in MEMORY_ROLES]
    return (indices[0], indices[-1]) if indices else None


def block_overlays(attention: LayerAttention) -> tuple[list[dict], list[dict]]:
    """Lines at memory/sequence boundaries and a label in every block."""
    shapes, annotations = [], []
    q_span, k_span = memory_span(attention.query_roles), memory_span(attention.key_roles)
    n_q, n_k = len(attention.query_roles), len(attention.key_roles)
    line = {"color": "#d62728", "width": 2}
    if k_span and k_span[1] + 1 < n_k:
        shapes.append(
            {"type": "line", "x0": k_span[1] + 0.5, "x1": k_span[1] + 0.5, "y0": -0.5, "y1": n_q - 0.5, "line": line}
        )
    if q_span and q_span[1] + 1 < n_q:
        shapes.append(
            {"type": "line", "y0": q_span[1] + 0.5, "y1": q_span[1] + 0.5, "x0": -0.5, "x1": n_k - 0.5, "line": line}
        )

    def ranges(span, n):
        if span is None:
            return [(False, 0, n - 1)]
        parts = [(True, span[0], span[1])]
        if span[1] + 1 < n:
            parts.append((False, span[1] + 1, n - 1))
        return parts

    for q_memory, q0, q1 in ranges(q_span, n_q):
        for k_memory, k0, k1 in ranges(k_span, n_k):
            annotations.append(
                {
                    "x": (k0 + k1) / 2,
                    "y": (q0 + q1) / 2,
                    "text": BLOCK_NAMES[(q_memory, k_memory)],
                    "showarrow": False,
                    "font": {"color": "#d62728", "size": 13},
                    "bgcolor": "rgba(255,255,255,0.6)",
                }
            )
    return shapes, annotations


def color_max(percent: np.ndarray, autoscale: bool) -> int:
    """Top of the colour scale: 100%, or with autoscale the largest weight shown (at least 1%)."""
    return max(1, int(percent.max())) if autoscale else 100


def weights_heatmap(weights: torch.Tensor, x: list[str], y: list[str], autoscale: bool, hover: str) -> dict:
    """A heatmap trace of attention weights [q, k] as uint8 whole percent, keys across, queries down; `hover`
    begins its hover text."""
    z = quantize_percent(weights)  # [q, k] uint8 percent
    return {
        "type": "heatmap",
        "z": z,
        "x": x,
        "y": y,
        "zmin": 0,
        "zmax": color_max(z, autoscale),
        "colorscale": colorscale(COLORSCALE),
        "hovertemplate": f"{hover}query %{{y}}<br>key %{{x}}<br>weight %{{z}}%<extra></extra>",
    }


def _role(role: AxisRole | None) -> str:
    return f" ({role.words})" if role else ""


def attention_heatmap(attention: LayerAttention, head: int, autoscale: bool = False) -> PlainFigure:
    """One head's map, large: query on the left, key on top. Shapes and
    labels sit at category indices, which Plotly accepts on category axes.
    Sized by its token counts, so no label is dropped however long the input."""
    x, y = axis_labels(attention.key_tokens), axis_labels(attention.query_tokens)
    shapes, annotations = block_overlays(attention)
    cell = max(MIN_CELL_PX, min(MAX_CELL_PX, MAP_PX // max(len(x), len(y))))
    top = top_labels_margin(x)
    left = 20 + CHAR_PX * max(map(len, y))
    heatmap = {
        **weights_heatmap(attention.weights[head], x, y, autoscale, ""),
        "colorbar": {"title": {"text": "% (head max)" if autoscale else "%"}},
        "hovertemplate": f"query{_role(attention.query_axis_role)} %{{y}}<br>key{_role(attention.key_axis_role)} "
        "%{x}<br>weight %{z}%<extra></extra>",
    }
    title = f"{attention.stack} layer {attention.layer} head {head}" + "".join(
        f", {key} {value}" for key, value in attention.index.items()
    )
    layout = {
        "title": {"text": title, "y": 0.99, "yanchor": "top"},
        "shapes": shapes,
        "annotations": annotations,
        "width": left + cell * len(x) + 120,
        "height": top + cell * len(y) + 20,
        "margin": {"l": 10, "r": 10, "t": top, "b": 10},
        "xaxis": {"side": "top", "type": "category", "tickangle": -60, "dtick": 1},
        "yaxis": {"autorange": "reversed", "type": "category", "dtick": 1},
    }
    return plain_figure([heatmap], layout)


def top_labels_margin(labels: list[str]) -> int:
    """The top margin of a figure whose column labels stand above it rotated by 60 degrees, its title above them
    (anchored at the top: "y": 0.99, "yanchor": "top")."""
    return 70 + CHAR_PX * max(map(len, labels), default=0)


def head_grid(attention: LayerAttention, columns: int = 4, autoscale: bool = False) -> PlainFigure:
    """All heads of one layer as small multiples; with autoscale each on its own colour scale."""
    x, y = axis_labels(attention.key_tokens), axis_labels(attention.query_tokens)
    panels = [(f"head {h}", attention.weights[h], x, y) for h in range(attention.weights.shape[0])]
    scale = "each head's colour scale up to its own largest weight" if autoscale else "colour scale 0 to 100%"
    return small_multiples(
        panels, f"{attention.stack} layer {attention.layer}: all heads ({scale})", columns, autoscale
    )


def call_grid(calls: list[LayerAttention], head: int, columns: int = 4, autoscale: bool = False) -> PlainFigure:
    """One head of one layer in every call of a run that calls it more than
    once (every segment, every step), as small multiples; each call has its own tokens."""
    panels = []
    for view in calls:
        where = ", ".join(f"{key} {value}" for key, value in view.index.items())
        panels.append((where, view.weights[head], axis_labels(view.key_tokens), axis_labels(view.query_tokens)))
    first = calls[0]
    unit = next(iter(first.index), "call")
    title = f"{first.stack} layer {first.layer} head {head} in each of its {len(calls)} {unit}s"
    return small_multiples(panels, title, columns, autoscale)


def small_multiples(
    panels: list[tuple[str, torch.Tensor, list[str], list[str]]], title: str, columns: int, autoscale: bool
) -> PlainFigure:
    """(subplot title, weights [q, k], key labels, query labels) panels in a grid, without tick labels."""
    rows = -(-len(panels) // columns)
    layout = subplot_layout(rows, columns, [panel[0] for panel in panels], 0.03, 0.08)
    data = []
    for i, (name, weights, x, y) in enumerate(panels):
        xaxis, yaxis = axis_ref(i)
        data.append(
            {
                **weights_heatmap(weights, x, y, autoscale, f"{name}<br>"),
                "showscale": False,
                "xaxis": xaxis,
                "yaxis": yaxis,
            }
        )
        layout[f"xaxis{xaxis[1:]}"].update(showticklabels=False, type="category")
        layout[f"yaxis{yaxis[1:]}"].update(showticklabels=False, autorange="reversed", type="category")
    layout.update(title={"text": title}, height=230 * rows + 60, margin={"l": 10, "r": 10, "t": 70, "b": 10})
    return plain_figure(data, layout)


def block_summary(blocks: list[HeadBlocks], stack: str) -> PlainFigure:
    """Layer x head mass in each block: which heads write, read and process."""
    chosen = [b for b in blocks if b.stack == stack]
    layers = max(b.layer for b in chosen) + 1
    heads = max(b.head for b in chosen) + 1
    layout = subplot_layout(1, 4, list(BLOCKS), 0.04, 0.08)
    data = []
    for column, block in enumerate(BLOCKS):
        z = np.zeros((layers, heads), dtype=np.float32)
        for b in chosen:
            z[b.layer, b.head] = getattr(b, block)
        xaxis, yaxis = axis_ref(column)
        data.append(
            {
                "type": "heatmap",
                "z": quantize_percent(z),
                "x": [f"h{h}" for h in range(heads)],
                "y": [f"L{layer}" for layer in range(layers)],
                "zmin": 0,
                "zmax": 100,
                "colorscale": colorscale(COLORSCALE),
                "showscale": column == len(BLOCKS) - 1,
                "hovertemplate": f"{block}<br>%{{y}} %{{x}}<br>mass %{{z}}%<extra></extra>",
                "xaxis": xaxis,
                "yaxis": yaxis,
            }
        )
        layout[f"yaxis{yaxis[1:]}"]["autorange"] = "reversed"
    layout.update(
        title={"text": f"{stack}: attention mass per block (share of all query rows)"},
        height=120 + 28 * layers,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return plain_figure(data, layout)


def lesion_curve(memory_size: list[int], bleu: list[float], trained: int, title: str) -> go.Figure:
    """BLEU against inference memory size; the trained size marked."""
    figure = go.Figure(
        go.Scatter(
            x=memory_size,
            y=bleu,
            mode="lines+markers",
            name="BLEU",
            hovertemplate="memory %{x}<br>BLEU %{y:.2f}<extra></extra>",
        )
    )
    figure.add_vline(x=trained, line_dash="dash", line_color="#d62728", annotation_text=f"trained: {trained}")
    figure.update_layout(
        title=title,
        xaxis_title="memory size at inference",
        yaxis_title="BLEU",
        height=380,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return figure


def attribution_chart(attribution: Attribution) -> go.Figure:
    """Integrated gradients (signed) and saliency (gradient norm) per source token and memory slot."""
    figure = make_subplots(
        rows=2,
        cols=2,
        column_widths=[0.65, 0.35],
        shared_yaxes=False,
        horizontal_spacing=0.06,
        vertical_spacing=0.18,
        subplot_titles=[
            "integrated gradients: source",
            "integrated gradients: memory",
            "saliency: source",
            "saliency: memory",
        ],
    )
    source = axis_labels(attribution.source_tokens)
    memory = axis_labels(attribution.memory_slots)
    panels = [
        (attribution.integrated_gradients_source, source, 1, 1),
        (attribution.integrated_gradients_memory, memory, 1, 2),
        (attribution.saliency_source, source, 2, 1),
        (attribution.saliency_memory, memory, 2, 2),
    ]
    for values, labels, row, column in panels:
        figure.add_trace(
            go.Bar(
                x=labels,
                y=values,
                showlegend=False,
                marker_color="#1f77b4" if row == 1 else "#ff7f0e",
                hovertemplate="%{x}<br>%{y:.4f}<extra></extra>",
            ),
            row=row,
            col=column,
        )
    figure.update_xaxes(type="category", tickangle=-60)
    figure.update_layout(
        title=f"output token {attribution.position}: {html.escape(attribution.token)} "
        f"(IG completeness error {attribution.convergence_delta:.3g})",
        height=560,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return figure


def compare_blocks(per_model: dict[str, list[HeadBlocks]]) -> go.Figure:
    """For each model, the mean over heads of each block's mass, per stack
    and layer, as stacked bars on one shared scale."""
    colors = {"update": "#1f77b4", "write": "#2ca02c", "read": "#d62728", "process": "#9467bd"}
    figure = make_subplots(
        rows=1,
        cols=len(per_model),
        subplot_titles=[html.escape(m) for m in per_model],
        shared_yaxes=True,
        horizontal_spacing=0.03,
    )
    for column, blocks in enumerate(per_model.values(), start=1):
        groups: dict[str, list[HeadBlocks]] = {}
        for b in blocks:
            groups.setdefault(f"{b.stack} L{b.layer}", []).append(b)
        labels = list(groups)
        for block in BLOCKS:
            means = [float(np.mean([getattr(b, block) for b in groups[label]])) for label in labels]
            figure.add_trace(
                go.Bar(
                    x=labels,
                    y=means,
                    name=block,
                    marker_color=colors[block],
                    legendgroup=block,
                    showlegend=column == 1,
                    hovertemplate=f"{block}<br>%{{x}}<br>%{{y:.2f}}<extra></extra>",
                ),
                row=1,
                col=column,
            )
    figure.update_layout(
        barmode="stack",
        height=460,
        title="Attention mass per block, mean over heads",
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    figure.update_xaxes(tickangle=-60)
    return figure
