"""The FF-memory section of docs/results.md (paper 003), from <checkpoint>/ff_analysis.json: how FF layers' keys
and values agree and how memories add up to predictions, by layer, after the language models' perplexity."""

from __future__ import annotations

from training.report.decoding_notes import DECODING
from training.report.language_model import language_model_section

# Paper 003's shapes (16-layer Transformer LM on WikiText-103), as docs/REFERENCE.md states them.
PAPER_FF_SHAPES = (
    "agreement near 0 in the lower layers, rising in the upper layers; zero agreement in most predictions; "
    "the residual agrees with the final output more and more with depth; the FF output overriding the residual is rare"
)


def ff_memories_section(metrics: dict[str, dict], ff: dict[str, dict]) -> list[str]:
    """The language models' perplexity, then the FF studies: the corpora, agreement and aggregation by layer."""
    return [
        "## FF layers as key-value memories (paper 003)",
        "",
        *language_model_section(metrics),
        "Studies (`python -m training ff-memories`): trigger prefixes, one per sentence, top 50 per key; "
        "w is the next token of a key's",
        "top trigger; a key agrees when argmax p_i = w. 'Random' pairs every value with another key's w. "
        "Cases compare the top token of",
        "the residual entering the FF layer, of the FF output and of the layer output. "
        "Translation models: their decoders, teacher-forced.",
        DECODING["ff"],
        "",
        *ff_corpora(ff),
        "",
        f"Paper 003 (16-layer LM, WikiText-103), shapes: {PAPER_FF_SHAPES}.",
        "",
        "### Key-value agreement by layer",
        "",
        *ff_agreement_table(ff),
        "",
        "### How memories add up to predictions, by layer",
        "",
        *ff_aggregation_table(ff),
        "",
    ]


def ff_agreement_table(ff: dict[str, dict]) -> list[str]:
    lines = [
        (
            "| model | layer | keys with triggers | agreement (random keys) | any top-50 trigger agrees "
            "| median rank of w (random) | rank < 10 (random) |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for name, study in ff.items():
        for r in study["agreement"]:
            lines.append(
                f"| {name} | {r['layer']} | {r['keys_with_triggers']} "
                f"| {_share(r['agreement'])} ({_share(r['baseline_agreement'])}) "
                f"| {_share(r['any_trigger_agreement'])} | {r['median_rank']:.0f} ({r['baseline_median_rank']:.0f}) "
                f"| {_share(r['rank_below_10'])} ({_share(r['baseline_rank_below_10'])}) |"
            )
    return lines


def ff_aggregation_table(ff: dict[str, dict]) -> list[str]:
    lines = [
        (
            "| model | layer | active keys per prediction | zero agreement | residual wins | FF wins "
            "| all agree | composition | residual = final prediction |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, study in ff.items():
        for r in study["aggregation"]["layers"]:
            lines.append(
                f"| {name} | {r['layer']} | {r['mean_active_memories']:.1f} | {_share(r['zero_agreement'])} "
                f"| {_share(r['residual_wins'])} | {_share(r['ff_wins'])} | {_share(r['all_agree'])} "
                f"| {_share(r['composition'])} | {_share(r['residual_agrees_with_final'])} |"
            )
    return lines


def ff_corpora(ff: dict[str, dict]) -> list[str]:
    return [
        f"- {name}: mined on {s['mining']['corpus']} "
        f"({s['mining']['sentences']:,} sentences, top {s['mining']['top_k']} per key); "
        f"aggregation on {s['aggregation']['sentences']:,} held-out sentences"
        for name, s in ff.items()
    ]


def _share(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"
