"""The paper 002 task tables of docs/results.md, from the task checkpoints'
metrics.json (checkpoints/tasks/<task>_<n>seg_<carry>[<memory>]_<steps>steps_seed<k>/): per-character
test accuracy of RMT, Transformer-XL and the no-memory baseline by number of
segments (a model with another memory size or cache length its own column), mean ± standard deviation over
the seeds it names, beside the paper's figures."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

from training.evaluation.bootstrap import LEVEL, RESAMPLES, paired_mean_difference, sample_char_accuracy
from training.loop.segment_task_run import DEFAULT_MEMORY
from training.report.metrics_files import chosen_step, load_metrics

CARRY_NAMES = {"none": "no memory", "xl": "Transformer-XL", "rmt": "RMT"}
# Paper 002, per-character accuracy: (task, segments) -> {carry: accuracy}; the headline figures.
PAPER = {
    ("copy", 9): {"none": 0.10, "xl": 0.28, "rmt": 1.00},
    ("reverse", 6): {"none": 0.10, "xl": 0.67, "rmt": 0.90},
    ("quadratic", 6): {"xl": 0.93, "rmt": 0.99},
}


BOOTSTRAP_SEED = 0
Model = tuple[str, int]  # carry, memory (tokens or cache length; DEFAULT_MEMORY for no memory)
Group = tuple[str, int, int, Model]  # task, steps, segments, model


def model_of(found: dict) -> Model:
    """A run's carry and memory; a run from before `memory` was recorded had the default."""
    return found["carry"], DEFAULT_MEMORY if found["carry"] == "none" else found.get("memory", DEFAULT_MEMORY)


def model_label(model: Model) -> str:
    carry, memory = model
    if memory == DEFAULT_MEMORY:
        return CARRY_NAMES[carry]
    return f"{CARRY_NAMES[carry]}, {'cache' if carry == 'xl' else 'memory'} {memory}"


def grouped(metrics: dict[str, dict]) -> dict[Group, list[dict]]:
    """(task, steps, segments, model) -> the runs' metrics, one per seed."""
    groups: dict[Group, list[dict]] = defaultdict(list)
    for found in metrics.values():
        if {"task", "steps", "segments", "carry", "test"} <= found.keys():
            groups[found["task"], found["steps"], found["segments"], model_of(found)].append(found)
    return groups


def cell(runs: list[dict]) -> str:
    """Mean ± standard deviation over the runs, and the seeds they ran."""
    scores = [run["test"]["char_accuracy"] for run in runs]
    spread = f" ± {statistics.stdev(scores):.2f}" if len(scores) > 1 else ""
    return f"{statistics.mean(scores):.2f}{spread} ({seed_names(sorted(run['seed'] for run in runs))})"


def seed_names(seeds: list[int]) -> str:
    """'seed 2', 'seeds 1-3' (consecutive) or 'seeds 1, 3'."""
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}-{seeds[-1]}"
    return "seeds " + ", ".join(map(str, seeds))


def task_table(groups: dict[Group, list[dict]], task: str, steps: int) -> list[str]:
    """Segments by model at one budget: the default models' three columns, then any other memory size run."""
    runs = {key: found for key, found in groups.items() if key[:2] == (task, steps)}
    segment_counts = sorted({segments for (_, _, segments, _) in runs})
    defaults = [(carry, DEFAULT_MEMORY) for carry in CARRY_NAMES]
    models = defaults + sorted(
        {model for (*_, model) in runs} - set(defaults), key=lambda m: (list(CARRY_NAMES).index(m[0]), m[1])
    )
    lines = [
        "| segments | " + " | ".join(map(model_label, models)) + " | paper (no memory / Tr-XL / RMT) |",
        "|---|" + "---|" * (len(models) + 1),
    ]
    for segments in segment_counts:
        cells = [cell(runs[task, steps, segments, model]) if (task, steps, segments, model) in runs else "-"
                 for model in models]  # fmt: skip
        paper = PAPER.get((task, segments))
        quoted = " / ".join(f"{paper[c]:.2f}" if c in paper else "-" for c in CARRY_NAMES) if paper else ""
        lines.append(f"| {segments} | " + " | ".join(cells) + f" | {quoted} |")
    return lines


def runs_table(groups: dict[Group, list[dict]]) -> list[str]:
    """Every run: seed, steps, the step chosen on validation, wall time and threads."""
    lines = ["| run | seed | steps | chosen at | val | test char | test answer | wall s | threads |", "|---" * 9 + "|"]
    for (task, _, segments, model), runs in sorted(groups.items()):
        for run in sorted(runs, key=lambda r: r["seed"]):
            chosen = chosen_step(run)
            lines.append(
                f"| {task}, {segments} seg, {model_label(model)} | {run['seed']} | {run['steps']} | {chosen} | "
                f"{run['validation_char_accuracy']:.3f} | {run['test']['char_accuracy']:.3f} | "
                f"{run['test']['answer_accuracy']:.3f} | {run['train_seconds']:.0f} | {run['threads']} |"
            )
    return lines


def memory_differences(groups: dict[Group, list[dict]]) -> list[str]:
    """Each run of a memory size or cache length other than the default against the default run of its task,
    segments, carry and seed (the longest such): per-character test accuracy, paired over the test samples."""
    defaults: dict[tuple[str, int, str, int], dict] = {}
    for (task, _, segments, (carry, memory)), runs in groups.items():
        for run in runs if memory == DEFAULT_MEMORY else []:
            key = (task, segments, carry, run["seed"])
            if key not in defaults or run["steps"] > defaults[key]["steps"]:
                defaults[key] = run
    lines = []
    for (task, steps, segments, model), runs in sorted(groups.items()):
        for run in sorted(runs, key=lambda r: r["seed"]) if model[1] != DEFAULT_MEMORY else []:
            default = defaults.get((task, segments, model[0], run["seed"]))
            paired = paired_runs(run, default)
            if paired is not None and default is not None:
                lines.append(
                    f"- {task}, {segments} segments, seed {run['seed']}: {model_label(model)} ({steps} steps) − "
                    f"{model_label((model[0], DEFAULT_MEMORY))} ({default['steps']} steps): {paired}"
                )
    return paired_block(lines)


def carry_differences(groups: dict[Group, list[dict]]) -> list[str]:
    """RMT against Transformer-XL (both of the default memory) at equal steps and segments: each seed's
    per-character test accuracy paired over the test samples, and where every RMT seed scores above every
    Transformer-XL seed, the chance of that under no difference (1 / C(n + m, n): a one-sided exact rank test)."""
    lines = []
    rmt, xl = ("rmt", DEFAULT_MEMORY), ("xl", DEFAULT_MEMORY)
    for task, steps, segments, model in sorted(groups):
        if model != rmt or (task, steps, segments, xl) not in groups:
            continue
        ours, theirs = groups[task, steps, segments, rmt], groups[task, steps, segments, xl]
        by_seed = {run["seed"]: run for run in theirs}
        for run in sorted(ours, key=lambda r: r["seed"]):
            paired = paired_runs(run, by_seed.get(run["seed"]))
            if paired is not None:
                lines.append(
                    f"- {task}, {segments} segments, {steps} steps, seed {run['seed']}: RMT − Transformer-XL {paired}"
                )
        worst = min(run["test"]["char_accuracy"] for run in ours)
        best_other = max(run["test"]["char_accuracy"] for run in theirs)
        if worst > best_other:
            chance = 1 / math.comb(len(ours) + len(theirs), len(ours))
            lines.append(
                f"- {task}, {segments} segments, {steps} steps: every RMT seed ({len(ours)}) above every "
                f"Transformer-XL seed ({len(theirs)}); p = {chance:.3g} (one-sided exact rank test)"
            )
    return paired_block(lines)


def paired_runs(run: dict, other: dict | None) -> str | None:
    """`run` minus `other` in per-character test accuracy paired over the test samples, with its interval, in
    words; None where either kept no per-sample record (or there is no other)."""
    ours = sample_char_accuracy(run["test"])
    theirs = sample_char_accuracy(other["test"]) if other is not None else None
    if ours is None or theirs is None:
        return None
    difference, low, high = paired_mean_difference(ours, theirs, BOOTSTRAP_SEED)
    return f"{difference:+.4f} [{low:+.4f}, {high:+.4f}] over {len(ours):,} test samples"


def paired_block(lines: list[str]) -> list[str]:
    """Lines of paired differences under the sentence that says how they were computed; none: nothing."""
    if not lines:
        return []
    return [
        f"Per-character test accuracy, paired over the test samples ({LEVEL:.0%} interval, "
        f"{RESAMPLES:,} resamplings, seed {BOOTSTRAP_SEED}):",
        "",
        *lines,
        "",
    ]


def segment_task_section(checkpoints: Path) -> list[str]:
    groups = grouped(load_metrics(checkpoints / "tasks"))
    parts = [
        "## Recurrent memory on algorithmic tasks (paper 002)",
        "",
        "Per-character accuracy of the answer on 1,000 test samples (teacher-forced, the paper's measure), "
        "mean ± std over the seeds each cell names.",
        "Ours: 2-layer decoder, d_model 64, 4 heads, d_ff 256, relative attention; memory tokens (RMT) = cache length "
        "(Transformer-XL) = 8 where a column names no other (Transformer-XL, cache 60: the paper's cache, issue 39);",
        "copy and reverse of 24 symbols from 8 (chance 0.125); full BPTT through the memory; Adam 1e-3, clip 0.25, "
        "batch 32; the step chosen on",
        "256 validation samples (`python -m training segment-task`, CPU). Paper: 4 layers, d_model 128, "
        "hundreds of thousands of steps on GPUs.",
        "",
    ]
    for task in ("copy", "reverse", "quadratic"):
        budgets = sorted({steps for (t, steps, _, _) in groups if t == task})
        for steps in budgets:
            parts += [f"### {task}, {steps} steps", "", *task_table(groups, task, steps), ""]
        if not budgets:
            parts += [f"### {task}", "", f"No {task} runs yet.", ""]
    carried = carry_differences(groups)
    parts += ["### RMT against Transformer-XL at equal steps", "", *carried] if carried else []
    differences = memory_differences(groups)
    parts += ["### Other memory sizes against the default", "", *differences] if differences else []
    parts += ["### Every run", "", *runs_table(groups), ""]
    return parts
