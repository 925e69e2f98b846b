"""Figures of the segments page: one segment's attention with its blocks
outlined, the memory's path across segments, and the per-position strip of
right and wrong next tokens (with and without a lesion)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

import numpy as np

from app.figures.attention import attention_heatmap, axis_labels, quantize_percent, top_labels_margin
from app.figures.plain import PlainFigure, colorscale
from app.figures.plain import figure as plain_figure
from inference.analyses.attention import LayerAttention
from inference.analyses.segments import EXTRA_COLUMNS, MemoryPath, NextTokenHits, SegmentSpans

BLOCK_OF_ROLE = {"cache": "cache", "read_mem": "read", "write_mem": "write"}  # any other role: the sequence
OUTLINE = {"color": "#d62728", "width": 2}
RIGHT, WRONG = "#6fa8dc", "#fdb863"  # blue and orange (told apart without red-green vision), under dark text
PROBE_GREENS = [[0, "#ffffff"], [1, "#74c476"]]  # light enough that dark numbers read at 9:1 or more
PROBE_TEXT = {"size": 11, "color": "#111111"}


def role_blocks(roles: Sequence[str]) -> list[tuple[str, int, int]]:
    """Contiguous blocks of an axis: (name, first index, last index)."""
    blocks, start = [], 0
    for name, run in groupby(BLOCK_OF_ROLE.get(role, "sequence") for role in roles):
        size = len(list(run))
        blocks.append((name, start, start + size - 1))
        start += size
    return blocks


def segment_attention(view: LayerAttention, head: int, autoscale: bool) -> PlainFigure:
    """One head in one segment, every (query block, key block) rectangle outlined and
    named inside its top-left corner, "sequence → read": sequence queries on read-memory keys."""
    figure = attention_heatmap(view, head, autoscale)
    shapes, annotations = [], []
    for q_name, q0, q1 in role_blocks(view.query_roles):
        for k_name, k0, k1 in role_blocks(view.key_roles):
            shapes.append(
                {"type": "rect", "x0": k0 - 0.5, "x1": k1 + 0.5, "y0": q0 - 0.5, "y1": q1 + 0.5, "line": OUTLINE}
            )
            annotations.append(
                {"text": f"{q_name} → {k_name}", "x": k0 - 0.5, "y": q0 - 0.5, "xanchor": "left", "yanchor": "top",
                 "showarrow": False, "font": {"color": "#d62728", "size": 10}, "bgcolor": "rgba(255,255,255,0.7)"}
            )  # fmt: skip
    figure["layout"].update(shapes=shapes, annotations=annotations)  # the block overlays replaced
    return figure


def memory_path_figure(path: MemoryPath, tokens: list[str], spans: SegmentSpans) -> PlainFigure:
    """Rows: every memory write (segment, slot); columns: input positions, then the read and write blocks and cache."""
    x = [*axis_labels(tokens), *EXTRA_COLUMNS]
    y = [f"seg {s} slot {j}" for s, j in path.rows]
    z = quantize_percent(path.weights)  # [writes, positions + 3] uint8 percent
    heatmap = {
        "type": "heatmap", "z": z, "x": x, "y": y, "zmin": 0, "zmax": 100, "colorscale": colorscale("Blues"),
        "colorbar": {"title": {"text": "%"}}, "hovertemplate": "%{y} writes from %{x}: %{z}%<extra></extra>",
    }  # fmt: skip
    boundaries = [
        {"type": "line", "x0": start - 0.5, "x1": start - 0.5, "y0": -0.5, "y1": len(y) - 0.5, "line": OUTLINE}
        for start in spans.starts[1:]
    ]
    layout = {
        "title": {
            "text": f"What each memory write attends to (layer {path.layer}, mean over heads); lines mark segments",
            "y": 0.99,
            "yanchor": "top",
        },
        "shapes": boundaries,
        "height": top_labels_margin(x) + 60 + 14 * len(y),
        "width": max(700, 40 + 200 + 12 * len(x)),
        "margin": {"l": 10, "r": 10, "t": top_labels_margin(x), "b": 10},
        "xaxis": {"type": "category", "showticklabels": len(x) <= 200, "tickangle": -60, "side": "top"},
        "yaxis": {"type": "category", "autorange": "reversed"},
    }
    return plain_figure([heatmap], layout)


def hits_strip(
    tokens: list[str], spans: SegmentSpans, plain: NextTokenHits, lesioned: NextTokenHits | None
) -> PlainFigure:
    """Per input position: right (1) or wrong (0) next token, unscored blank; a row
    marking where the lesion changed the outcome; lines at segment boundaries."""
    rows: dict[str, list[bool | None] | list[float | None]] = {f"plain {plain.accuracy:.1%}": plain.hits}
    if lesioned is not None:
        rows[f"lesioned {lesioned.accuracy:.1%}"] = lesioned.hits
        rows["changed"] = [
            None if a is None else float(a == b) for a, b in zip(plain.hits, lesioned.hits)
        ]  # 0 (✗): changed
    z = np.array([[np.nan if h is None else float(h) for h in row] for row in rows.values()])  # [rows, positions]
    marks = np.where(z == 0, "✗", "").tolist()  # wrong (or changed) is marked, not only coloured
    x = axis_labels(tokens)
    heatmap = {
        "type": "heatmap", "z": z, "x": x, "y": list(rows), "zmin": 0, "zmax": 1, "showscale": False, "xgap": 1,
        "ygap": 2, "colorscale": [[0, WRONG], [1, RIGHT]], "text": marks, "texttemplate": "%{text}",
        "textfont": {"color": "#111111"}, "hovertemplate": "%{y}<br>%{x}: %{z}<extra></extra>",
    }  # fmt: skip
    title = "Next token right (blue) or wrong (orange, ✗), position by position" + (
        "; the last row marks ✗ where the lesion changed the outcome" if lesioned is not None else ""
    )
    layout = {
        "title": {"text": title},
        "shapes": [
            {"type": "line", "x0": s - 0.5, "x1": s - 0.5, "y0": -0.5, "y1": len(rows) - 0.5, "line": OUTLINE}
            for s in spans.starts[1:]
        ],
        "height": 130 + 30 * len(rows),
        "width": max(700, 200 + 12 * len(x)),
        "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
        "xaxis": {"type": "category", "showticklabels": False},
        "yaxis": {"type": "category", "autorange": "reversed"},
    }
    return plain_figure([heatmap], layout)


def probe_figure(probe: dict, segment: int) -> PlainFigure:
    """Held-out accuracy of linear probes reading source position i (columns)
    from memory slot j, from all slots together, and chance (rows), after one segment."""
    last = len(probe["per_slot"]) - 1
    after = min(segment, last)
    rows = [*probe["per_slot"][after], probe["all_slots"][after], probe["chance"]]  # [slots + 2][position]
    names = [f"slot {j}" for j in range(len(probe["per_slot"][after]))] + ["all slots", "chance"]
    positions = [f"{i}" for i in range(len(probe["chance"]))]
    heatmap = {
        "type": "heatmap", "z": np.asarray(rows), "x": positions, "y": names, "zmin": 0, "zmax": 1,
        "colorscale": PROBE_GREENS, "xgap": 1, "ygap": 1, "colorbar": {"title": {"text": "accuracy"}},
        "texttemplate": "%{z:.2f}", "textfont": PROBE_TEXT,
        "hovertemplate": "%{y} reads source position %{x}: %{z:.2f}<extra></extra>",
    }  # fmt: skip
    samples = probe["samples"]
    title = (
        f"What the memory holds after segment {after}"
        + (f" (the last; segment {segment} asked)" if segment > last else "")
        + f": linear probes, {samples['train']} train / {samples['val']} val / {samples['test']} test samples"
    )
    layout = {
        "title": {"text": title},
        "height": 140 + 26 * len(names),
        "width": max(700, 160 + 34 * len(positions)),
        "margin": {"l": 10, "r": 10, "t": 60, "b": 40},
        "xaxis": {"type": "category", "title": {"text": "source position"}},
        "yaxis": {"type": "category", "autorange": "reversed"},
    }
    return plain_figure([heatmap], layout)
