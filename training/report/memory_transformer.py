"""Tables 1 and 2 of docs/results.md: BLEU of the Memory Transformer variants (paper 000) beside the paper's,
with the pairs it ranks, the training length, the spread over seeds and the memory lesions."""

from __future__ import annotations

from training.evaluation.comparisons import Comparisons
from training.loop.seed_runs import seed_spread
from training.report.comparison_tables import (
    lesions_against_trained_size,
    pairs_against,
    schedule_against_short,
    short_schedule_labels,
    variants_against_baseline,
)
from training.report.decoding_notes import DECODING
from training.report.metrics_files import TEST_SPLIT, number

# The paper's numbers are WMT-14 news BLEU after 20 epochs, averaged over 3 runs; ours are single runs on
# Multi30k captions at a shorter schedule. Only the shapes compare: which variant is better or worse than the
# baseline, and how BLEU moves with memory size.

# Table 1, small models (4+4 layers, 20 epochs).
PAPER_TABLE_1 = {
    "transformer": ("Transformer (baseline)", 19.01),
    "memtransformer_5": ("MemTransformer 5", 19.17),
    "memtransformer_10": ("MemTransformer 10", 19.15),
    "memtransformer_20": ("MemTransformer 20", 19.14),
    "memctrl_20": ("MemCtrl 20", None),  # reported for base models only (24.13 vs baseline 24.65)
    "memctrl_shared_20": ("MemCtrl Shared 20", None),  # base only (25.73)
    "membottleneck_10": ("MemBottleneck 10", 11.20),
    "membottleneck_20": ("MemBottleneck 20", 10.41),
    "membottleneck_skip_20": ("MemBottleneck Skip 20", 16.45),
}
# Pairs of variants the paper ranks, the first above the second: (first, second) -> the paper's BLEU for them.
PAPER_RANKED = {
    ("membottleneck_skip_20", "membottleneck_20"): "small models: 16.45 against 10.41",
    ("memctrl_shared_20", "memctrl_20"): "base models: 25.73 against 24.13",
}
# Table 2, base models (6+6 layers): BLEU at inference memory sizes 0, 2, 5, 10, 20, 30.
PAPER_LESION_SIZES = [0, 2, 5, 10, 20, 30]
PAPER_TABLE_2 = {
    "memtransformer_10": [11.75, 15.91, 18.22, 25.07, 12.39, 7.87],
    "memtransformer_20": [3.87, 8.58, 9.75, 14.51, 25.58, 7.51],
}
# The models behind the headline claims, each trained under three seeds (training/train_seeds.sh).
SEEDED = {
    "transformer": "Transformer (baseline)",
    "memtransformer_10": "MemTransformer 10",
    "memtransformer_20": "MemTransformer 20",
    "membottleneck_10": "MemBottleneck 10",
    "working_memory_de_en": "Working memory de-en",
}


def variant_labels() -> dict[str, str]:
    """{folder: label} of Table 1's variants, in the table's order."""
    return {name: label for name, (label, _) in PAPER_TABLE_1.items()}


def table_1(metrics: dict[str, dict]) -> list[str]:
    lines = [
        (
            "| model | BLEU val | BLEU test_2016_flickr | chrF test | epochs | train minutes "
            "| paper BLEU (WMT-14, small) |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for name, (label, paper) in PAPER_TABLE_1.items():
        m = metrics.get(name)
        if m is None:
            lines.append(f"| {label} | not trained yet | | | | | {number(paper)} |")
            continue
        train = m.get("train", {})
        lines.append(
            f"| {label} | {number(m['bleu'].get('val'))} | {number(m['bleu'].get(TEST_SPLIT))} "
            f"| {number(m['chrf'].get(TEST_SPLIT))} "
            f"| {train.get('epochs', '-')} | {train.get('seconds', 0) / 60:.0f} | {number(paper)} |"
        )
    return lines


def table_1_section(metrics: dict[str, dict], comparisons: Comparisons | None) -> list[str]:
    """Table 1 and, from the stored test outputs, each variant against the baseline, the pairs the paper ranks,
    the paper's training length against our shorter one and the spread over seeds."""
    lines = ["## Table 1: BLEU by variant", "", DECODING["translation"], "", *table_1(metrics), ""]
    if comparisons is None:
        return lines
    variants = variant_labels()
    shorter = short_schedule_labels(comparisons, variants, lesioned=False)
    return [
        *lines,
        "BLEU, chrF and the length ratio from the stored test outputs, each variant against the baseline "
        "trained for as many epochs: the shipped runs, then the shorter runs kept in "
        "`checkpoints/short_schedule` against the baseline's:",
        "",
        *variants_against_baseline(comparisons, {**variants, **shorter}),
        "",
        *ranked_pairs(comparisons),
        *training_length(comparisons),
        *seeds(comparisons),
    ]


def ranked_pairs(comparisons: Comparisons) -> list[str]:
    """The pairs of variants the paper ranks, ours beside its order; nothing where none is stored."""
    variants = variant_labels()
    ranked = pairs_against(comparisons, list(PAPER_RANKED), variants)
    if not ranked:
        return []
    paper_ranks = "; ".join(f"{variants[a]} above {variants[b]} ({bleu} BLEU)" for (a, b), bleu in PAPER_RANKED.items())
    return [
        "### Pairs the paper ranks",
        "",
        f"The paper puts {paper_ranks}; ours, the first minus the second on the same test sentences, "
        "at each schedule both were trained on:",
        "",
        *ranked,
        "",
    ]


def training_length(comparisons: Comparisons) -> list[str]:
    """Each model on the paper's schedule against its shorter run; nothing where none is stored."""
    schedule_table = schedule_against_short(comparisons, variant_labels())
    if not schedule_table:
        return []
    return [
        "### Training length: the paper's 20 epochs against our first 4",
        "",
        "Each model retrained on the paper's schedule, against its shorter run (kept in "
        "`checkpoints/short_schedule`, config, metrics and outputs), on the same test sentences:",
        "",
        *schedule_table,
        "",
    ]


def seeds(comparisons: Comparisons) -> list[str]:
    """The spread of each SEEDED model over its training seeds; nothing where none is stored."""
    spread = seed_spread(comparisons, SEEDED)
    if not spread:
        return []
    return [
        "### Seeds: the spread of a model over its training seeds",
        "",
        "The shipped run and the same config under other seeds (`checkpoints/seeds/<name>/seed_<k>`, "
        "`training/train_seeds.sh`), trained for as many epochs; mean ± sample standard deviation over "
        "the seeds, from the stored test outputs. A row with one seed has no other seed trained yet.",
        "",
        *spread,
        "",
    ]


def table_2(metrics: dict[str, dict]) -> list[str]:
    shown = [metrics[name] for name in PAPER_TABLE_1 if name in metrics]
    sizes = sorted({k for m in shown for k in m.get("lesion", {}).get("memory_size", [])} | set(PAPER_LESION_SIZES))
    lines = ["| model | " + " | ".join(f"m={k}" for k in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for name, (label, _) in PAPER_TABLE_1.items():
        lesion = metrics.get(name, {}).get("lesion")
        if lesion:
            by_size = dict(zip(lesion["memory_size"], lesion["bleu"]))
            lines.append(
                f"| {label} (ours) | " + " | ".join(_lesion_cell(by_size.get(k), k, name) for k in sizes) + " |"
            )
        if name in PAPER_TABLE_2:
            by_size = dict(zip(PAPER_LESION_SIZES, PAPER_TABLE_2[name]))
            lines.append(f"| {label} (paper, base) | " + " | ".join(number(by_size.get(k)) for k in sizes) + " |")
    return lines


def _lesion_cell(value, size: int, name: str) -> str:
    trained = name.rsplit("_", 1)[-1]
    text = number(value)
    return f"**{text}**" if trained.isdigit() and int(trained) == size and value is not None else text


def table_2_section(metrics: dict[str, dict], comparisons: Comparisons | None) -> list[str]:
    """Table 2 and, from the stored test outputs, each memory size against the run's trained size."""
    lines = [
        "## Table 2: memory lesions (BLEU on test_2016_flickr at each inference memory size; trained size in bold)",
        "",
        DECODING["lesions"] + " The paper's rows: as the paper reports them.",
        "",
        *table_2(metrics),
        "",
    ]
    if comparisons is None:
        return lines
    lesioned = {**variant_labels(), **short_schedule_labels(comparisons, variant_labels(), lesioned=True)}
    return [
        *lines,
        "Each memory size against the same run's trained size, from the stored test outputs; below the "
        "shipped runs, the memory models' shorter runs (`checkpoints/short_schedule`, labelled with their "
        "epochs):",
        "",
        *lesions_against_trained_size(comparisons, lesioned),
        "",
    ]
