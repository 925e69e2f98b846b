"""What the sections of docs/results.md share: reading the checkpoints' metrics files (the shipped runs and the
shorter ones kept in checkpoints/short_schedule) and writing their figures into table cells."""

from __future__ import annotations

import json
from pathlib import Path

from training.loop.config import TrainConfig, load_config

SHORT_SCHEDULE = "short_schedule"  # checkpoints/short_schedule/<name>: a model's run on a shorter schedule
SEGMENT_LM_RUNS = "segment_lm"  # checkpoints/segment_lm/<name>: paper 002's language-model runs
TEST_SPLIT = "test_2016_flickr"


def load_metrics(checkpoints: Path, file: str = "metrics.json") -> dict[str, dict]:
    """{folder: metrics} of every checkpoint, and of the short-schedule runs as "short_schedule/<name>"."""
    found = {}
    for path in sorted([*checkpoints.glob(f"*/{file}"), *checkpoints.glob(f"{SHORT_SCHEDULE}/*/{file}")]):
        try:
            found[str(path.parent.relative_to(checkpoints))] = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue  # a broken checkpoint is the registry's to report, not the table's
    return found


def segment_lm_folders(checkpoints: Path) -> list[Path]:
    """The folders the paper 002 language-model sections read: every run in checkpoints/segment_lm/, then every
    served checkpoint but those that serve one of those runs (the same training config and steps: the app's copy,
    in float16, of a run whose record is already read), so that each run is counted once."""
    runs = sorted((checkpoints / SEGMENT_LM_RUNS).glob("*/"))
    recorded = {training_run(folder) for folder in runs} - {None}
    return [*runs, *(folder for folder in sorted(checkpoints.glob("*/")) if training_run(folder) not in recorded)]


def training_run(folder: Path) -> tuple[str, int] | None:
    """(training config, steps) of the run a folder holds, the config named as trained_from names it; None where
    its metrics.json records no training."""
    try:
        train = json.loads((folder / "metrics.json").read_text()).get("train", {})
    except (OSError, json.JSONDecodeError):
        return None
    return (train.get("config", folder.name), train["steps"]) if "steps" in train else None


def trained_from(folder: Path, metrics: dict, configs: Path) -> TrainConfig:
    """The training config a run was trained from: configs/<train.config>.json, or for a run that does not record
    it, configs/<its folder's name>.json."""
    return load_config(configs / f"{metrics['train'].get('config', folder.name)}.json")


def number(value) -> str:
    """A figure to two decimals; "-" where there is none."""
    return "-" if value is None else f"{value:.2f}"


def chosen_step(run: dict) -> str:
    """The step `run` chose on validation, marked where it lies in the last 10% of training with how much that
    last tenth raised the best validation score: a run that may still have been improving when it stopped
    gains there, one on a plateau gains nothing. `run["curve"]`: [step, training loss, validation score, ...]
    at each evaluation."""
    best_step, cutoff = run["best_step"], 0.9 * run["steps"]
    if best_step <= cutoff:
        return str(best_step)
    before = max((point[2] for point in run["curve"] if point[0] <= cutoff), default=0.0)
    gain = max(point[2] for point in run["curve"]) - before
    return f"{best_step} (last 10%, validation +{gain:.4f})"
