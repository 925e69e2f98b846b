"""A model's config trained again under other seeds, and the spread of the
test figures over its seeds: how much of a difference between two models a
change of seed alone could make.

A seed run of `<name>` is `checkpoints/seeds/<name>/seed_<k>/`: its config,
metrics and stored test outputs are committed, its weights stay local. The
shipped `checkpoints/<name>` is one of the seeds (its record's seed); only runs
trained for as many epochs as it are counted with it."""

from __future__ import annotations

import statistics

from training.evaluation.comparisons import Comparisons
from training.evaluation.outputs import AS_TRAINED
from training.loop.config import TrainConfig, config_from_dict

SEEDS = "seeds"  # checkpoints/seeds/<name>/seed_<k>


def seeded_config(config: TrainConfig, seed: int) -> TrainConfig:
    """`config` under another seed (its weights' initialisation, dropout and batch order), named apart."""
    values = config.to_dict()
    values["name"] = f"{config.name}_seed{seed}"
    values["train"]["seed"] = seed
    return config_from_dict(values)


def seed_folder(name: str, seed: int) -> str:
    """The seed run's folder under the checkpoints folder."""
    return f"{SEEDS}/{name}/seed_{seed}"


def seed_runs(comparisons: Comparisons, name: str) -> dict[int | None, str]:
    """{seed: folder} of `name`'s runs with stored outputs and as many epochs as the shipped run, in seed order."""
    if not comparisons.has(name):
        return {}
    runs: dict[int | None, str] = {comparisons.seed(name): name}
    for folder in sorted((comparisons.checkpoints / SEEDS / name).glob("seed_*")):
        run = str(folder.relative_to(comparisons.checkpoints))
        if comparisons.has(run) and comparisons.epochs(run) == comparisons.epochs(name):
            runs[comparisons.seed(run)] = run
    return dict(sorted(runs.items(), key=lambda item: (item[0] is None, item[0] or 0)))


def _spread(values: list[float], digits: int) -> str:
    """'mean ± sample std' ('mean ± -' for one value)."""
    mean = f"{statistics.fmean(values):.{digits}f}"
    return f"{mean} ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else f"{mean} ± -"


def seed_spread(comparisons: Comparisons, models: dict[str, str]) -> list[str]:
    """Per model (folder -> label): its seeds, and BLEU, chrF and length ratio as mean ± std over them."""
    lines = [
        "| model | epochs | seeds | BLEU | chrF | length ratio | BLEU by seed |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, label in models.items():
        runs = seed_runs(comparisons, name)
        if not runs:
            continue
        scores = [comparisons.stored_quality((run, AS_TRAINED)) for run in runs.values()]
        seeds = ", ".join("?" if seed is None else str(seed) for seed in runs)
        by_seed = ", ".join(f"{score.bleu:.2f}" for score in scores)
        lines.append(
            f"| {label} | {comparisons.epochs(name)} | {seeds} "
            f"| {_spread([s.bleu for s in scores], 2)} | {_spread([s.chrf for s in scores], 2)} "
            f"| {_spread([s.length_ratio for s in scores], 3)} | {by_seed} |"
        )
    return lines if len(lines) > 2 else []
