"""Paper 001's tables in docs/results.md.

- Algorithmic tasks: whole-sequence and per-bit accuracy by test length for
  the Neural GPU and the GRU + attention baseline: the served runs
  (checkpoints/<model>_<task>/metrics.json) and the collection of the others
  (checkpoints/algorithmic/<run>/metrics.json).
- Translation (Multi30k de-en, test_2016_flickr): teacher-forced perplexity,
  BLEU, chrF and the length ratio of every model beside the paper's Table 1,
  the paired bootstrap intervals of the pairs compared (the Extended Neural GPU
  against the attention baseline at equal training, the baseline at 8 epochs
  against 2), and BLEU by source length (the
  paper's Figure 6), from checkpoints/active_memory_translation/comparison.json
  (training.evaluation.active_memory_comparison measures them).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from training.evaluation.active_memory_comparison import COMPARISON
from training.evaluation.bootstrap import PairedDifference, interval_text, unpaired_mean_difference
from training.report.metrics_files import chosen_step

# Paper 001, Table 1 (WMT'14 En-Fr): per-word perplexity and BLEU.
PAPER_TABLE_1 = {
    "neural_gpu": ("30.1", "< 5"),
    "markovian": ("11.8", "< 5"),
    "extended": ("3.3", "29.6"),
    "gru_attention": ("3.4", "26.4"),
}


ALGORITHMIC_COLLECTION = "algorithmic"  # the runs not served by the app: metrics and configs only


def algorithmic_runs(checkpoints: Path) -> list[dict]:
    """Every algorithmic run's metrics.json (training/loop/neural_gpu_task_run.py writes "curriculum"), served or not,
    by task, model, longest training length and steps."""
    paths = [*checkpoints.glob("*/metrics.json"), *(checkpoints / ALGORITHMIC_COLLECTION).glob("*/metrics.json")]
    runs = [run for run in (json.loads(path.read_text()) for path in paths) if "curriculum" in run]
    return sorted(runs, key=lambda r: (r["task"], r["model"], r["training"]["max_length"], r["steps"], r["seed"]))


def algorithmic_table(checkpoints: Path) -> list[str]:
    runs = algorithmic_runs(checkpoints)
    if not runs:
        return []
    factors = [row["factor"] for row in runs[0]["test"]]
    head = " | ".join(f"{factor}x" for factor in factors)
    lines = [
        "### Algorithmic tasks: accuracy by test length (paper 001)",
        "",
        f"Whole-sequence accuracy / per-bit accuracy of the greedy output, {runs[0]['test_samples']} test samples "
        "per length, at 1, 2, 5 and 10 times the longest training length. Per-bit accuracy counts a missing bit as "
        "wrong; on carry chains most output bits are 0, so a model that writes zeros scores high per bit there. "
        "Steps: trained; chosen: the step chosen on validation at the longest training length.",
        "",
        f"| task | model | seed | trained on length | aids | steps; chosen | curriculum reached | {head} | train s |",
        "|---|---|---|---|---|---|---|" + "---|" * len(factors) + "---|",
    ]
    for run in runs:
        cells = " | ".join(f"{row['sequence']:.2f} / {row['bit']:.2f}" for row in run["test"])
        reached = run["curriculum"][-1][1] if run["curriculum"] else run["training"]["start_length"]
        reached_at = f" (step {run['curriculum'][-1][0]})" if run["curriculum"] else ""
        chosen = chosen_step(run)
        lines.append(
            f"| {run['task']} | {run['model']} | {run['seed']} | {run['training']['max_length']} | {aids(run)} | "
            f"{run['steps']}; chosen {chosen} | {reached}{reached_at} | {cells} | {run['train_seconds']:.0f} |"
        )
        if run["task"] == "addition":
            carry = " | ".join(f"{row['carry_sequence']:.2f} / {row['carry_bit']:.2f}" for row in run["test"])
            lines.append(f"| addition, carry chains | {run['model']} | {run['seed']} | | | | | {carry} | |")
    return [*lines, "", *aids_table(runs)]


def aids(run: dict) -> str:
    """The training aids a run had beyond the curriculum, gradient noise and dropout on the state."""
    sets = run["training"].get("relaxed_sets", 1)
    return f"relaxed, {sets} sets" if sets > 1 else "-"


def whole_sequence_outcomes(row: dict, samples: int) -> list[int]:
    """A test row's whole-sequence outcome per sample: its record where kept, else as many 1s as its accuracy
    counts (the order does not matter to an unpaired resampling)."""
    if "sample_whole" in row:
        return row["sample_whole"]
    right = round(row["sequence"] * samples)
    return [1] * right + [0] * (samples - right)


def aids_table(runs: list[dict]) -> list[str]:
    """Each task's Neural GPU runs with the relaxation against its runs without, one row per setting without
    (longest training length and steps: a half-trained run is not pooled with a finished one), whole-sequence
    accuracy at each multiple of the training length: each side's test samples pooled over its seeds, resampled
    unpaired."""
    relaxable = {run["model"] for run in runs if run["training"].get("relaxed_sets", 1) > 1}  # the Neural GPU's
    neural = [run for run in runs if run["model"] in relaxable]
    lines = []
    for task in sorted({run["task"] for run in neural}):
        relaxed = [run for run in neural if run["task"] == task and run["training"].get("relaxed_sets", 1) > 1]
        before = [run for run in neural if run["task"] == task and run["training"].get("relaxed_sets", 1) == 1]
        for with_aids, without in itertools.product(_by_setting(relaxed), _by_setting(before)):
            cells = []
            for index in range(len(with_aids[0]["test"])):  # the multiples of the training length, in order
                aided, unaided = pooled_outcomes(with_aids, index), pooled_outcomes(without, index)
                cells.append(interval_text(*unpaired_mean_difference(aided, unaided, seed=0)))
            lines.append(f"| {task} | {_runs_text(with_aids)} | {_runs_text(without)} | {' | '.join(cells)} |")
    if not lines:
        return []
    factors = [row["factor"] for row in neural[0]["test"]]
    return [
        "Whole-sequence accuracy of the Neural GPU with the training aids (relaxed sharing, a longer curriculum) "
        "minus without, at each multiple of each run's own longest training length, with the 95% interval of "
        "2,000 unpaired resamplings of the test samples (each side's samples pooled over its seeds; bootstrap "
        "seed 0), one row per setting without the aids. The interval covers the draw of test samples, not of "
        "seeds: each seed's row is in the table above.",
        "",
        "| task | with aids (length, steps, seeds) | without (length, steps, seeds) | "
        + " | ".join(f"{f}x" for f in factors)
        + " |",
        "|---|---|---|" + "---|" * len(factors),
        *lines,
        "",
    ]


def pooled_outcomes(runs: list[dict], index: int) -> list[int]:
    """Whether each test sample came out whole, pooled over `runs` (a setting's seeds), at the `index`-th
    multiple of the training length."""
    return [outcome for run in runs for outcome in whole_sequence_outcomes(run["test"][index], run["test_samples"])]


def _by_setting(runs: list[dict]) -> list[list[dict]]:
    """`runs` grouped by longest training length and steps, in that order; a group holds the setting's seeds."""
    groups: dict[tuple[int, int], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["training"]["max_length"], run["steps"]), []).append(run)
    return [groups[key] for key in sorted(groups)]


def _runs_text(runs: list[dict]) -> str:
    """One setting's runs: "20, 10000 steps; seeds 1, 2"."""
    seeds = sorted({run["seed"] for run in runs})
    return f"{runs[0]['training']['max_length']}, {runs[0]['steps']} steps; seeds {', '.join(map(str, seeds))}"


def translation_tables(checkpoints: Path) -> list[str]:
    path = checkpoints / COMPARISON
    if not path.exists():
        return []
    comparison = json.loads(path.read_text())
    rows = comparison["models"]
    lines = [
        f"### Translation: Multi30k de-en, {comparison['split']} (paper 001, Table 1)",
        "",
        "Perplexity is per BPE token, teacher-forced on the reference (every target token and the EOS), "
        "without label smoothing; the paper's is per word on WMT'14 En-Fr. BLEU, chrF and the length ratio "
        "(output length / reference length) are sacrebleu's on greedy outputs.",
        "",
        "| model | test perplexity | BLEU | chrF | length ratio | val BLEU | seed | steps | train s "
        "| paper ppl / BLEU |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, row in rows.items():
        ppl, bleu = PAPER_TABLE_1[row["paper"]]
        lines.append(
            f"| {label} | {row['perplexity']:.2f} | {row['bleu']:.2f} | {row['chrf']:.2f} | {row['length_ratio']:.3f} "
            f"| {row['validation_bleu']:.2f} | {row['seed']} | {row['steps']} | {row['seconds']:.0f} | {ppl} / {bleu} |"
        )
    level = round(comparison["bootstrap"]["level"] * 100)
    lines += [
        "",
        "BLEU by source length in words (sentences per bucket: "
        + ", ".join(f"{k}: {v}" for k, v in comparison["bucket_sentences"].items())
        + f"); the last rows give a pair's score differences (a - b: the Extended Neural GPU against the attention "
        f"baseline at equal training, then each model at 8 epochs against 2), BLEU then chrF, "
        f"with sacrebleu's paired bootstrap: the {level}% interval and the p-value "
        f"({comparison['bootstrap']['resamples']} resamples of the sentences, seed {comparison['bootstrap']['seed']}).",
        "",
        "| model | all | " + " | ".join(comparison["bucket_sentences"]) + " |",
        "|---|---|" + "---|" * len(comparison["bucket_sentences"]),
    ]
    for label, row in rows.items():
        cells = " | ".join(f"{b['bleu']:.2f}" if b else "-" for b in row["by_source_length"].values())
        lines.append(f"| {label} | {row['bleu']:.2f} | {cells} |")
    for difference in comparison["differences"]:
        for metric, title in (("bleu", "BLEU"), ("chrf", "chrF")):
            cells = " | ".join(_interval(v, metric) for v in difference["by_source_length"].values())
            lines.append(
                f"| {difference['a']} - {difference['b']}, {title} | {_interval(difference['overall'], metric)} "
                f"| {cells} |"
            )
    return [*lines, ""]


def _interval(value: dict | None, metric: str) -> str:
    if value is None:
        return "-"  # no sentence of that length
    return PairedDifference(**value[metric]).text()


def active_memory_section(checkpoints: Path) -> list[str]:
    return [*algorithmic_table(checkpoints), *translation_tables(checkpoints)]
