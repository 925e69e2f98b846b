"""Plotly figures of the working memory (paper 004): one sentence's
decisions and target-to-memory attention. Nothing here computes an analysis."""

from __future__ import annotations

import plotly.graph_objects as go

from app.figures.attention import COLORSCALE, axis_labels, quantize_percent
from inference.analyses.working_memory import MemoryAttention, StepDecision

KIND_COLORS = {"memory": "#d9822b", "target": "#2b6cb0"}


def decisions_chart(steps: list[StepDecision]) -> go.Figure:
    """p(memory) of the type head before every element, coloured by what was written."""
    labels = axis_labels([s.token for s in steps])
    figure = go.Figure()
    for kind, color in KIND_COLORS.items():
        chosen = [s for s in steps if s.kind == kind]
        figure.add_trace(
            go.Bar(
                x=[labels[s.step - 1] for s in chosen],
                y=[s.p_memory for s in chosen],
                name=f"wrote {kind}",
                marker_color=color,
                customdata=[[s.nucleus_size, "yes" if s.overridden else "no"] for s in chosen],
                hovertemplate="%{x}<br>p(memory) %{y:.3f}<br>nucleus %{customdata[0]} tokens"
                "<br>memory full %{customdata[1]}<extra></extra>",
            )
        )
    figure.add_hline(y=0.5, line={"dash": "dash", "color": "#888"})
    figure.update_layout(
        title="Type head: p(memory) before each element (memory is written above 0.5 while there is room)",
        yaxis={"title": "p(memory)", "range": [0, 1]},
        height=360,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        barmode="overlay",
    )
    figure.update_xaxes(type="category", categoryorder="array", categoryarray=labels, tickangle=-60)
    return figure


def memory_attention_heatmap(attention: MemoryAttention) -> go.Figure:
    """Head-averaged decoder self-attention from target queries onto memory
    keys. The colour scale ends at the largest weight, not at 100%: target
    queries spend a few percent on memory, which a 0-100 scale would hide."""
    percent = quantize_percent(attention.weights.mean(dim=0))  # [target queries, memory keys]
    top = max(int(percent.max()) if percent.size else 0, 1)
    figure = go.Figure(
        go.Heatmap(
            z=percent,
            x=axis_labels(attention.key_tokens),
            y=axis_labels(attention.query_tokens),
            zmin=0,
            zmax=top,
            colorscale=COLORSCALE,
            colorbar={"title": {"text": "%"}},
            hovertemplate="target query %{y}<br>memory key %{x}<br>weight %{z}% (mean of heads)<extra></extra>",
        )
    )
    mass = ", ".join(f"{100 * m:.0f}" for m in attention.mass.tolist())
    figure.update_layout(
        title=f"Decoder self-attention layer {attention.layer}: target tokens onto memory "
        f"(mean of heads; scale to {top}%)<br>"
        f"<sub>% of each head's attention on memory, mean over target queries: {mass}</sub>",
        title_y=0.99,
        title_yanchor="top",
        height=min(1000, 320 + 16 * len(attention.query_tokens)),
        margin={"l": 10, "r": 10, "t": 200, "b": 10},
    )
    figure.update_xaxes(side="top", type="category", tickangle=-60)
    figure.update_yaxes(autorange="reversed", type="category")
    return figure


def unique_tokens_chart(unique_tokens: dict) -> go.Figure:
    """Histogram of unique memory tokens per sentence (memory_content_summary()["unique_tokens"])."""
    counts = unique_tokens["sentences_by_unique_count"]
    figure = go.Figure(
        go.Bar(
            x=list(range(len(counts))),
            y=counts,
            marker_color=KIND_COLORS["memory"],
            hovertemplate="%{x} unique tokens: %{y} sentences<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Unique tokens in memory per sentence (mean {unique_tokens['mean_unique']:.2f}, "
        f"memory length {unique_tokens['mean_memory_length']:.2f})",
        xaxis={"title": "unique memory tokens", "dtick": 1},
        yaxis={"title": "sentences"},
        height=320,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return figure


def diversity_chart(diversity: dict) -> go.Figure:
    """Unique memory tokens and memory length against translation length (summary["diversity_by_length"])."""
    buckets = [b for b in diversity["buckets"] if b["n_sentences"]]
    labels = [f"{b['label']} words (n={b['n_sentences']})" for b in buckets]
    figure = go.Figure(
        [
            go.Bar(
                x=labels,
                y=[b["mean_unique"] for b in buckets],
                name="unique tokens",
                marker_color=KIND_COLORS["memory"],
            ),
            go.Bar(x=labels, y=[b["mean_memory_length"] for b in buckets], name="memory length", marker_color="#bbb"),
        ]
    )
    r = diversity["spearman_length_unique"]
    figure.update_layout(
        title="Memory against translation length "
        f"(Spearman r, length vs unique tokens: {'n/a' if r is None else f'{r:.2f}'})",
        yaxis={"title": "tokens per sentence"},
        barmode="group",
        height=340,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return figure


def words_in_memory_chart(keywords: dict, content_words: dict) -> go.Figure:
    """P(a keyword / content word of the translation is in memory), beside the rotated-memory baseline."""
    groups = {f"keywords (YAKE top {keywords['top']})": keywords, "content words": content_words}
    figure = go.Figure()
    for key, name, color in (
        ("matched", "own memory", KIND_COLORS["memory"]),
        ("rotated_baseline", "another sentence's memory", "#bbb"),
    ):
        values = [
            (label, rates[key]["p_in_memory"])
            for label, rates in groups.items()
            if rates[key] and rates[key]["p_in_memory"] is not None
        ]
        figure.add_trace(
            go.Bar(
                x=[v[0] for v in values],
                y=[v[1] for v in values],
                name=name,
                marker_color=color,
                hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>",
            )
        )
    heights = [y for trace in figure.data for y in trace.y]
    if not any(heights):  # bars of height 0, or none: say why instead of showing an empty plot
        figure.add_annotation(
            text="no keyword or content word of any translation is in its memory"
            if heights
            else "no translation has a keyword or content word to look for",
            x=0.5,
            y=0.5,
            xref="paper",
            yref="paper",
            showarrow=False,
            font={"size": 14},
        )
    figure.update_layout(
        title="Probability that a word of the translation is in memory",
        yaxis={"title": "probability", "range": [0, 1]},
        barmode="group",
        height=320,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return figure


def parts_of_speech_chart(parts_of_speech: dict) -> go.Figure:
    """Share of memory tokens per part of speech (summary["parts_of_speech"])."""
    fractions = parts_of_speech["fractions"]
    figure = go.Figure(
        go.Bar(
            x=list(fractions),
            y=list(fractions.values()),
            marker_color=KIND_COLORS["memory"],
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        title=f"Parts of speech of memory tokens ({parts_of_speech['n_pieces']} unique tokens per sentence, summed)",
        yaxis={"title": "share"},
        height=320,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return figure


def memory_summary_figures(summary: dict) -> dict[str, go.Figure]:
    """Every corpus figure of one memory_content_summary, by name."""
    return {
        "unique-tokens": unique_tokens_chart(summary["unique_tokens"]),
        "diversity": diversity_chart(summary["diversity_by_length"]),
        "words-in-memory": words_in_memory_chart(summary["keywords"], summary["content_words"]),
        "parts-of-speech": parts_of_speech_chart(summary["parts_of_speech"]),
    }
