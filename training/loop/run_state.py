"""The resumable state of a task run (training/loop/segment_task_run.py, training/loop/neural_gpu_task_run.py): one
torch file in the run folder, written atomically, refused when it belongs to another run."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import torch

STATE_FILE = "state.pt"


def load_run_state(run_dir: Path, run) -> dict | None:
    """The saved state of `run` (a frozen dataclass with a `steps` field), or None when there is none; a state
    saved by a run that differs in anything but its number of steps raises ValueError."""
    path = run_dir / STATE_FILE
    if not path.exists():
        return None
    state = torch.load(path, weights_only=True)
    if {**state["run"], "steps": run.steps} != asdict(run):
        raise ValueError(f"{run_dir} holds another run; remove it or pick another --run-dir")
    return state


def save_run_state(run_dir: Path, run, **state) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.save({"run": asdict(run), **state}, run_dir / "state.tmp")
    os.replace(run_dir / "state.tmp", run_dir / STATE_FILE)
