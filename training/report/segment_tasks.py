"""The paper 002 task tables of docs/results.md, from the task checkpoints'
metrics.json (checkpoints/tasks/<task>_<n>seg_<carry>_seed<k>/): per-character
test accuracy of RMT, Transformer-XL and the no-memory baseline by number of
segments, mean ± standard deviation over seeds, beside the paper's figures."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from training.report.metrics_files import load_metrics

CARRY_NAMES = {"none": "no memory", "xl": "Transformer-XL", "rmt": "RMT"}
# Paper 002, per-character accuracy: (task, segments) -> {carry: accuracy}; the headline figures.
PAPER = {
    ("copy", 9): {"none": 0.10, "xl": 0.28, "rmt": 1.00},
    ("reverse", 6): {"none": 0.10, "xl": 0.67, "rmt": 0.90},
    ("quadratic", 6): {"xl": 0.93, "rmt": 0.99},
}


Group = tuple[str, int, int, str]  # task, steps, segments, carry


def grouped(metrics: dict[str, dict]) -> dict[Group, list[dict]]:
    """(task, steps, segments, carry) -> the runs' metrics, one per seed, of the runs with 8 memory tokens or a
    cache of 8 (the tables' setting; a run records `memory` since the longer caches of issue 39, 8 before)."""
    groups: dict[Group, list[dict]] = defaultdict(list)
    for found in metrics.values():
        if {"task", "steps", "segments", "carry", "test"} <= found.keys() and found.get("memory", 8) == 8:
            groups[found["task"], found["steps"], found["segments"], found["carry"]].append(found)
    return groups


def cell(runs: list[dict]) -> str:
    scores = [run["test"]["char_accuracy"] for run in runs]
    spread = f" ± {statistics.stdev(scores):.2f}" if len(scores) > 1 else ""
    return f"{statistics.mean(scores):.2f}{spread} (n={len(scores)})"


def task_table(groups: dict[Group, list[dict]], task: str, steps: int) -> list[str]:
    segment_counts = sorted({segments for (t, n, segments, _) in groups if (t, n) == (task, steps)})
    lines = [
        "| segments | " + " | ".join(CARRY_NAMES.values()) + " | paper (no memory / Tr-XL / RMT) |",
        "|---|" + "---|" * (len(CARRY_NAMES) + 1),
    ]
    for segments in segment_counts:
        cells = [cell(groups[task, steps, segments, carry]) if groups.get((task, steps, segments, carry)) else "-"
                 for carry in CARRY_NAMES]  # fmt: skip
        paper = PAPER.get((task, segments))
        quoted = " / ".join(f"{paper[c]:.2f}" if c in paper else "-" for c in CARRY_NAMES) if paper else ""
        lines.append(f"| {segments} | " + " | ".join(cells) + f" | {quoted} |")
    return lines


def runs_table(groups: dict[Group, list[dict]]) -> list[str]:
    """Every run: seed, steps, the step chosen on validation, wall time and threads."""
    lines = ["| run | seed | steps | chosen at | val | test char | test answer | wall s | threads |", "|---" * 9 + "|"]
    for (task, _, segments, carry), runs in sorted(groups.items()):
        for run in sorted(runs, key=lambda r: r["seed"]):
            lines.append(
                f"| {task}, {segments} seg, {CARRY_NAMES[carry]} | {run['seed']} | {run['steps']} | "
                f"{run['best_step']} | {run['validation_char_accuracy']:.3f} | {run['test']['char_accuracy']:.3f} | "
                f"{run['test']['answer_accuracy']:.3f} | {run['train_seconds']:.0f} | {run['threads']} |"
            )
    return lines


def segment_task_section(checkpoints: Path) -> list[str]:
    groups = grouped(load_metrics(checkpoints / "tasks"))
    parts = [
        "## Recurrent memory on algorithmic tasks (paper 002)",
        "",
        "Per-character accuracy of the answer on 1,000 test samples (teacher-forced, the paper's measure), "
        "mean ± std over seeds (n).",
        "Ours: 2-layer decoder, d_model 64, 4 heads, d_ff 256, relative attention; memory tokens (RMT) = cache length "
        "(Transformer-XL) = 8;",
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
    parts += ["### Every run", "", *runs_table(groups), ""]
    return parts
