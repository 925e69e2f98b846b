"""The paper 002 language-model table of docs/results.md, from
checkpoints/segment_lm/<name>/ and the served segment language models in
checkpoints/<name>/ (config.json and metrics.json): perplexity of the
segment-50 models (no memory, Transformer-XL, RMT), each beside the paper's
WikiText-103 figure, with the difference from the no-memory baseline trained
on as many tokens and its bootstrap interval over the articles of each text."""

from __future__ import annotations

import json
from pathlib import Path

from inference.core.capabilities import Capability
from inference.core.checkpoint import FORMAT_VERSION
from inference.core.family import capabilities_of, config_from_dict, current_config_values, family_of_config
from training.evaluation.bootstrap import LEVEL, RESAMPLES, interval_text, paired_perplexity_difference
from training.loop.config import TrainConfig
from training.report.metrics_files import segment_lm_folders, trained_from

SPLIT = "wikitext103_test"
VALIDATION = "enwiki_val"
BOOTSTRAP_SEED = 0
# Paper 002, WikiText-103 test perplexity at segment length 50: (memory tokens, cache length) -> perplexity.
PAPER = {(0, 0): 39.05, (0, 10): 28.98, (0, 50): 26.54, (1, 0): 28.71, (10, 0): 26.37}


def segment_lm_run(folder: Path) -> tuple[dict, dict] | None:
    """(model config, metrics) of a paper 002 segment language model's checkpoint: a perplexity record and a model
    that reads segments, trained from scratch (the pretrained models given memory have their own table); None for
    any other folder."""
    if not (folder / "metrics.json").is_file() or not (folder / "config.json").is_file():
        return None
    metrics = json.loads((folder / "metrics.json").read_text())
    raw = json.loads((folder / "config.json").read_text())
    config = current_config_values(raw.get("model", {}), raw.get("format_version", FORMAT_VERSION))
    if "perplexity_counts" not in metrics or not config:  # a folder of another format has no "model" section
        return None
    model = config_from_dict(config)
    from_scratch = not family_of_config(model).needs_trained_start
    return (config, metrics) if Capability.SEGMENTS in capabilities_of(model) and from_scratch else None


def load_runs(checkpoints: Path, configs: Path) -> list[tuple[dict, dict, TrainConfig]]:
    """(model config, metrics, training config) of every finished run in checkpoints/segment_lm/ and every served
    segment language model, by training tokens, then baseline first, then by cache and memory. The training config
    is configs/<train.config>.json, the config the run was trained from (a run that does not record it: its
    folder's name)."""
    runs = []
    for folder in segment_lm_folders(checkpoints):
        found = segment_lm_run(folder)
        if found is not None:
            config, metrics = found
            runs.append((config, metrics, trained_from(folder, metrics, configs)))
    return sorted(
        runs,
        key=lambda run: (
            tokens(run[1], run[2]),
            run[0]["memory_size"] > 0,
            run[0]["cache_length"],
            run[0]["memory_size"],
        ),
    )


def tokens(metrics: dict, training: TrainConfig) -> int:
    """The tokens a run trained on: steps x blocks x block length."""
    return metrics["train"]["steps"] * training.train.batch_size * training.data.max_len


def carried(config: dict) -> str:
    if config["memory_size"]:
        return f"RMT, memory {config['memory_size']}"
    return f"Transformer-XL, cache {config['cache_length']}" if config["cache_length"] else "no memory"


def difference_cell(metrics: dict, reference: dict | None, split: str) -> str:
    """Perplexity on `split` minus the reference run's on the same articles, with its interval."""
    if reference is None or metrics is reference:
        return "-"
    documents = metrics["perplexity_counts"]["splits"][split].get("documents")
    reference = reference["perplexity_counts"]["splits"][split].get("documents")
    if documents is None or reference is None:
        return "(no per-article totals)"
    if documents["tokens"] != reference["tokens"]:
        return "(other tokenization)"
    return interval_text(
        *paired_perplexity_difference(documents["nll"], reference["nll"], documents["tokens"], BOOTSTRAP_SEED)
    )


def compared_pairs(runs: list[tuple[dict, dict, TrainConfig]]) -> list[tuple[int, dict, dict, dict, dict]]:
    """(budget, config, metrics, other config, other metrics) for the pairs the paper orders, at each budget: each
    RMT memory against every smaller one, each Transformer-XL cache against every shorter one, and RMT memory m
    against Transformer-XL cache m."""
    pairs = []
    for budget in sorted({tokens(metrics, training) for _, metrics, training in runs}):
        rmt = {c["memory_size"]: (c, m) for c, m, t in runs if tokens(m, t) == budget and c["memory_size"]}
        xl = {c["cache_length"]: (c, m) for c, m, t in runs if tokens(m, t) == budget and c["cache_length"]}
        for kind in (rmt, xl):
            sizes = sorted(kind)
            pairs += [(budget, *kind[large], *kind[small]) for i, large in enumerate(sizes) for small in sizes[:i]]
        pairs += [(budget, *rmt[size], *xl[size]) for size in sorted(rmt.keys() & xl.keys())]
    return pairs


def comparison_table(runs: list[tuple[dict, dict, TrainConfig]]) -> list[str]:
    """The memory variants against each other, each pair at one budget, by paired intervals over the articles."""
    pairs = compared_pairs(runs)
    if not pairs:
        return []
    lines = [
        "The variants against each other at equal training tokens (the paper's order: the longer cache and the larger "
        "memory lower, RMT below Transformer-XL at equal size). Δ: the first model's token perplexity minus the "
        "second's on the same articles, with the interval as above.",
        "",
        "| train tokens | model | against | Δ enwiki val [95% CI] | Δ WT-103 test [95% CI] | paper Δ WT-103 |",
        "|---" * 6 + "|",
    ]
    for budget, config, metrics, other_config, other in pairs:
        cells = [difference_cell(metrics, other, split) for split in (VALIDATION, SPLIT)]
        paper, paper_other = (PAPER.get((c["memory_size"], c["cache_length"])) for c in (config, other_config))
        paper_cell = "-" if paper is None or paper_other is None else f"{paper - paper_other:+.2f}"
        lines.append(
            f"| {budget:,} | {carried(config)} | {carried(other_config)} | {cells[0]} | {cells[1]} | {paper_cell} |"
        )
    return [*lines, ""]


def segment_lm_section(checkpoints: Path, configs: Path) -> list[str]:
    runs = load_runs(checkpoints, configs)
    parts = ["## Recurrent memory in language modelling (paper 002)", ""]
    if not runs:
        return [*parts, "No segment language-model runs yet (`training/train_segment_lm.sh`).", ""]
    baselines = {tokens(m, t): m for c, m, t in runs if not c["memory_size"] + c["cache_length"]}  # by budget
    model, counts = runs[0][0], runs[0][1]["perplexity_counts"]
    window = counts["context"]
    parts += [
        f"Segments of {model['segment_length']} tokens; d_model {model['d_model']}, {model['n_layers']} layers, "
        f"d_ff {model['d_ff']} (the shipped language model's size), BPE 8,000; trained on enwiki in blocks of "
        f"{window} tokens, memory fresh at each block, BPTT depth {model['bptt_depth']} (-1: the whole block).",
        f"Perplexity is scored on windows of {window} tokens advancing by {counts['stride']} (each token once, "
        "the memory fresh at the window's start). Token perplexity uses our BPE tokens; word perplexity is comparable "
        "across tokenizers, not with the paper's word-level vocabulary.",
        "Δ: token perplexity minus that of the no-memory baseline trained on as many tokens, on the same text, "
        f"with its {LEVEL:.0%} interval over {RESAMPLES:,} paired resamplings of the text's articles "
        f"(seed {BOOTSTRAP_SEED}); - where no baseline was trained on as many tokens.",
        "",
        "| model | enwiki val ppl | Δ enwiki val [95% CI] | WT-103 test ppl | Δ WT-103 test [95% CI] | "
        "WT-103 test word ppl | paper WT-103 | steps | train tokens | seed | wall min |",
        "|---" * 11 + "|",
    ]
    for config, metrics, training in runs:
        train, budget = metrics["train"], tokens(metrics, training)
        differences = [difference_cell(metrics, baselines.get(budget), split) for split in (VALIDATION, SPLIT)]
        paper = PAPER.get((config["memory_size"], config["cache_length"]))
        parts.append(
            f"| {carried(config)} | {metrics['perplexity'][VALIDATION]:.1f} | {differences[0]} | "
            f"{metrics['perplexity'][SPLIT]:.1f} | {differences[1]} | {metrics['word_perplexity'][SPLIT]:.0f} | "
            f"{'-' if paper is None else f'{paper:.2f}'} | {train['steps']} | {budget:,} | {training.train.seed} | "
            f"{train['seconds'] / 60:.0f} |"
        )
    return [*parts, "", *comparison_table(runs)]
