"""The language models' perplexity in docs/results.md (the model of paper 003's FF-memory study): per word and
per token of each model's own vocabulary, on the enwiki and WikiText splits."""

from __future__ import annotations

from training.report.decoding_notes import DECODING
from training.report.metrics_files import number

LM_SPLITS = ["enwiki_val", "wikitext2_valid", "wikitext2_test", "wikitext103_valid", "wikitext103_test"]


def language_model_section(metrics: dict[str, dict]) -> list[str]:
    """The language model described, and its perplexity table."""
    return [
        "The language model: pre-LN decoder-only Transformer with ReLU FF layers on enwiki (docs/language_model.md). "
        "Word perplexity",
        "divides the summed token loss by the WikiText word count, so it compares across tokenizers; "
        "token perplexity is per BPE token.",
        DECODING["language_model"],
        "",
        *language_model_table(metrics),
        "",
    ]


def language_model_table(metrics: dict[str, dict]) -> list[str]:
    """Perplexity of every language model: per token of its own vocabulary,
    and per word (comparable across tokenizers)."""
    lines = [
        "| model | "
        + " | ".join(f"{split} word ppl (token ppl)" for split in LM_SPLITS)
        + " | steps | train minutes |",
        "|---|" + "---|" * (len(LM_SPLITS) + 2),
    ]
    for name, m in metrics.items():
        if "word_perplexity" not in m:
            continue
        cells = [f"{number(m['word_perplexity'].get(s))} ({number(m['perplexity'].get(s))})" for s in LM_SPLITS]
        train = m.get("train", {})
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {train.get('steps', '-')} | {number(train['seconds'] / 60) if 'seconds' in train else '-'} |"
        )
    return lines
