"""The comparison tables of docs/results.md for the translation models of
papers 000 and 004, from the checkpoints' stored test outputs: every row gives
BLEU, chrF and the length ratio, and every comparison the text makes (variant
against the baseline, a lesion against the trained memory size, the grown
memory against its control, masked against unmasked memory, for every seed
of a working-memory model) its paired bootstrap interval and p-value for
BLEU and for chrF."""

from __future__ import annotations

from training.evaluation.comparisons import Comparisons, Run, difference_cell, method_note, quality_cells
from training.evaluation.outputs import AS_TRAINED, MASKED, memory_condition, memory_size_of
from training.loop.seed_runs import seed_runs
from training.report.metrics_files import SHORT_SCHEDULE

BASELINE = "transformer"
HEAD = "| BLEU | chrF | length ratio | BLEU difference | chrF difference |"
RULE = "|---|---|---|---|---|"


def _row(label: str, comparisons: Comparisons, run: Run, against: Run | None) -> str:
    difference = comparisons.difference(run, against) if against else None
    bleu, chrf = (difference_cell(difference[m]) if difference else "-" for m in ("bleu", "chrf"))
    return f"| {label} | {quality_cells(comparisons.quality(run))} | {bleu} | {chrf} |"


def same_schedule(comparisons: Comparisons, model: str, name: str) -> str | None:
    """`name`'s run trained for as many epochs as `model` (the shipped one or its short-schedule run); None."""
    for run in (name, f"{SHORT_SCHEDULE}/{name}"):
        if comparisons.has(run) and comparisons.epochs(run) == comparisons.epochs(model):
            return run
    return None


def variants_against_baseline(comparisons: Comparisons, variants: dict[str, str]) -> list[str]:
    """Table 1: each variant (folder -> label, shipped or short-schedule run) minus the baseline Transformer
    trained for as many epochs; the baseline's own runs are the reference rows."""
    shown = [name for name in variants if comparisons.has(name)]
    if not shown:
        return ["No stored test outputs yet (`python -m training outputs`)."]
    lines = ["| model | epochs " + HEAD, "|---|---" + RULE]
    for name in shown:
        baseline = same_schedule(comparisons, name, BASELINE)
        against = (baseline, AS_TRAINED) if baseline not in (None, name) else None
        lines.append(_row(f"{variants[name]} | {comparisons.epochs(name)}", comparisons, (name, AS_TRAINED), against))
    return [*lines, *method_note()]


def pairs_against(comparisons: Comparisons, pairs: list[tuple[str, str]], labels: dict[str, str]) -> list[str]:
    """Each pair (a, b) of variants (folder -> label): a minus b, the shipped runs and, where both are kept,
    their shorter runs, whenever the two are trained for as many epochs."""
    lines = ["| model | against | epochs " + HEAD, "|---|---|---" + RULE]
    for a, b in pairs:
        for run_a, run_b in ((a, b), (f"{SHORT_SCHEDULE}/{a}", f"{SHORT_SCHEDULE}/{b}")):
            trained_as_long = comparisons.epochs(run_a) == comparisons.epochs(run_b)
            if comparisons.has(run_a) and comparisons.has(run_b) and trained_as_long:
                label = f"{labels[a]} | {labels[b]} | {comparisons.epochs(run_a)}"
                lines.append(_row(label, comparisons, (run_a, AS_TRAINED), (run_b, AS_TRAINED)))
    return [*lines, *method_note()] if len(lines) > 2 else []


def schedule_against_short(comparisons: Comparisons, variants: dict[str, str]) -> list[str]:
    """Each model that has a short-schedule run: that run, and the shipped run minus it."""
    lines = ["| model | epochs " + HEAD, "|---|---" + RULE]
    for name, label in variants.items():
        short = short_run(comparisons, name)
        if not (comparisons.has(name) and short):
            continue
        lines.append(_row(f"{label} | {comparisons.epochs(short)}", comparisons, (short, AS_TRAINED), None))
        longer = f"{label} | {comparisons.epochs(name)} (against {comparisons.epochs(short)})"
        lines.append(_row(longer, comparisons, (name, AS_TRAINED), (short, AS_TRAINED)))
    return [*lines, *method_note()] if len(lines) > 2 else []


def lesions_against_trained_size(comparisons: Comparisons, models: dict[str, str]) -> list[str]:
    """Table 2: each model at each inference memory size minus the same model at its trained size."""
    lines = ["| model | memory size " + HEAD, "|---|---" + RULE]
    for name, label in models.items():
        if not comparisons.has(name):
            continue
        trained = comparisons.memory_size(name)
        for size in sorted({trained, *_stored_sizes(comparisons, name)}):
            condition = AS_TRAINED if size == trained else memory_condition(size)
            against = None if size == trained else (name, AS_TRAINED)
            lines.append(
                _row(
                    f"{label} | {size}{' (trained)' if against is None else ''}",
                    comparisons,
                    (name, condition),
                    against,
                )
            )
    return [*lines, *method_note()] if len(lines) > 2 else []


def short_schedule_labels(comparisons: Comparisons, models: dict[str, str], *, lesioned: bool) -> dict[str, str]:
    """{short-schedule folder: label with its epochs} of the models (folder -> label) with a run kept in
    `checkpoints/short_schedule`, to set beside the shipped runs: in Table 1 every such run; in Table 2
    (`lesioned`) only the memory models' runs with lesion outputs."""
    labels = {}
    for name, label in models.items():
        short = short_run(comparisons, name)
        if short and (not lesioned or (comparisons.memory_size(short) > 0 and _stored_sizes(comparisons, short))):
            epochs = comparisons.epochs(short)
            labels[short] = f"{label}, shorter run" if epochs is None else f"{label}, {_epochs(epochs)}"
    return labels


def short_run(comparisons: Comparisons, name: str) -> str | None:
    """The folder of `name`'s run kept in `checkpoints/short_schedule`, if its outputs are stored; None."""
    short = f"{SHORT_SCHEDULE}/{name}"
    return short if comparisons.has(short) else None


def _epochs(count: int) -> str:
    return f"{count} epoch" if count == 1 else f"{count} epochs"


def _stored_sizes(comparisons: Comparisons, name: str) -> list[int]:
    sizes = (memory_size_of(condition) for condition in comparisons.conditions(name))
    return [size for size in sizes if size is not None]


def grown_against_control(comparisons: Comparisons, stages: list[str], control: str) -> list[str]:
    """Table 3: the last grown stage minus the model it grew from, and minus the control fine-tuned as long."""
    first, last = stages[0], stages[-1]
    if not comparisons.has(last):
        return []
    return [
        "| model " + HEAD,
        "|---" + RULE,
        _row(f"{last} (against {first})", comparisons, (last, AS_TRAINED), (first, AS_TRAINED)),
        _row(f"{last} (against {control})", comparisons, (last, AS_TRAINED), (control, AS_TRAINED)),
        _row(f"{control} (against {first})", comparisons, (control, AS_TRAINED), (first, AS_TRAINED)),
        *method_note(),
    ]


def working_memory_conditions(comparisons: Comparisons, model: str, plain: dict[str, str]) -> list[str]:
    """Paper 004, on the model's headline test split: the working-memory model masked and without memory minus
    as trained, for the shipped run and each of its seed runs trained as long (`seed_runs`), and plain
    Transformers (folder -> label) minus the shipped run."""
    runs = seed_runs(comparisons, model)
    if not runs:
        return []
    lines = ["| model " + HEAD, "|---" + RULE]
    labels = {}
    for seed, run in runs.items():
        label = labels[run] = "working memory" if len(runs) == 1 else f"working memory, seed {seed}"
        as_trained = (run, AS_TRAINED)
        lines += [
            _row(label, comparisons, as_trained, None),
            _row(f"{label}, masked (against unmasked)", comparisons, (run, MASKED), as_trained),
            _row(f"{label}, size 0 (against as trained)", comparisons, (run, memory_condition(0)), as_trained),
        ]
    for name, label in plain.items():
        if comparisons.has(name):
            against = f"{label} (against {labels[model]})"
            lines.append(_row(against, comparisons, (name, AS_TRAINED), (model, AS_TRAINED)))
    return [*lines, *method_note()]
