"""The issue-36 translator section of docs/results.md: a Hugging Face Marian trained here by our CLI, beside our own
Transformer baseline of the same sizes, data, tokenizer settings and schedule, from their stored test outputs."""

from __future__ import annotations

from training.evaluation.comparisons import Comparisons
from training.report.comparison_tables import variants_against_baseline
from training.report.decoding_notes import DECODING
from training.report.metrics_files import SHORT_SCHEDULE

MARIAN = "marian_de_en_4_epochs"
ROWS = {f"{SHORT_SCHEDULE}/transformer": "Transformer (ours)", MARIAN: "Marian (Hugging Face folder)"}


def hugging_face_translator_section(comparisons: Comparisons | None) -> list[str]:
    lines = [
        "## A Marian trained here (issue 36)",
        "",
        f"`{MARIAN}` is a Hugging Face Marian (`MarianMTModel`) in the paper's small configuration, as our Transformer "
        "baseline: d_model 128, d_ff 512, 8 heads, 4+4 layers, ReLU, embeddings scaled by √d_model, dropout 0.1, "
        "label smoothing 0.1, one BPE vocabulary of 8,000 shared by source, target and the output layer. It is "
        f"trained by our CLI (`training/configs/{MARIAN}.json`) on Multi30k de-en with the same batch (64), "
        "warm-up (1,000 steps), epochs (4) and seed (1) as the baseline's 4-epoch run, written with `save_pretrained` "
        "and opened through the Hugging Face translator family only. What differs is the implementation: Marian's "
        "sinusoidal positions, its attention dropout and its own initialisation.",
        "",
        DECODING["translation"],
        "",
    ]
    if comparisons is None or not comparisons.has(MARIAN):
        return [
            *lines,
            f"No stored test outputs of {MARIAN} yet (`python -m training outputs checkpoints/{MARIAN}`).",
            "",
        ]
    return [*lines, *variants_against_baseline(comparisons, ROWS), ""]
