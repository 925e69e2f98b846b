"""The algorithmic task runs' share of training (paper 001's Neural GPU tasks, paper 002's segment tasks):
a fixed number of steps on freshly generated batches, validation every `eval_every` steps, the best weights
on validation kept, and everything a resumed run needs saved in its run folder at every validation. Each
task run gives its batches, validation and extra state as `TaskCallbacks`; the steps themselves are
training.loop.steps's."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from training.loop.steps import StepSettings, run_steps

STATE_FILE = "state.pt"


@dataclass
class TaskProgress:
    step: int = 0  # steps taken
    best: float = -1.0  # validation score of the kept weights
    best_step: int = 0
    seconds: float = 0.0  # training time over every session of the run
    curve: list[list[float]] = field(default_factory=list)  # per validation: step, train loss, score, *extra


class TaskRunFolder:
    """A task run's folder: its resumable state (one torch file, written atomically, refused when it belongs
    to another run) and, once finished, its metrics.json."""

    def __init__(self, path: Path, run: Any):  # run: a frozen dataclass of the run's settings, with `steps`
        self.path, self.run = Path(path), run

    def load(self) -> dict | None:
        """The saved state, or None; a state saved by a run that differs in anything but its number of steps
        raises ValueError."""
        path = self.path / STATE_FILE
        if not path.exists():
            return None
        state = torch.load(path, weights_only=True, map_location="cpu")  # load_state_dict moves it to the model
        if {**state["run"], "steps": self.run.steps} != asdict(self.run):
            raise ValueError(f"{self.path} holds another run; remove it or pick another --run-dir")
        return state

    def save(self, **state: Any) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        torch.save({"run": asdict(self.run), **state}, self.path / "state.tmp")
        os.replace(self.path / "state.tmp", self.path / STATE_FILE)

    def write_metrics(self, metrics: dict) -> None:
        (self.path / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")


class TaskCallbacks:
    """What a task run gives the loop; `loss` and `validate` are its own, the rest default to nothing."""

    def loss(self, step: int) -> torch.Tensor:
        """The training loss of 0-based step `step` on a batch generated from the run's data seed and the step."""
        raise NotImplementedError

    def validate(self) -> tuple[float, list[float], str]:
        """(validation score, higher is better; extra curve columns; a note for the log line)."""
        raise NotImplementedError

    def after_step(self, step: int) -> None:
        """Anything the task does after a step besides validation (the Neural GPU's curriculum)."""

    def state(self) -> dict[str, Any]:
        """The task's own resumable state."""
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back what `state` saved."""


@dataclass(frozen=True)
class TaskSchedule:
    name: str  # the run's name, for the log
    steps: int
    eval_every: int
    keep_ties: bool  # a later validation that equals the best so far replaces the kept weights


class _TaskSteps:
    """The step loop's callbacks for a task run: progress, validation cadence, best weights, saving."""

    def __init__(self, model, optimizer, folder, schedule, task, progress, best_weights, began, log):
        self.model, self.optimizer, self.folder, self.schedule, self.task = model, optimizer, folder, schedule, task
        self.progress, self.best_weights, self.began, self.log = progress, best_weights, began, log

    def loss(self, step: int) -> torch.Tensor:
        return self.task.loss(step)

    def after_step(self, step: int, loss: float) -> None:
        progress, schedule = self.progress, self.schedule
        progress.step = step + 1
        self.task.after_step(step)
        if progress.step % schedule.eval_every and progress.step != schedule.steps:
            return
        self.model.eval()
        score, extra, note = self.task.validate()
        progress.seconds = time.monotonic() - self.began
        progress.curve.append([progress.step, round(loss, 4), round(score, 4), *extra])
        if score > progress.best or (schedule.keep_ties and score == progress.best):
            progress.best, progress.best_step = score, progress.step
            self.best_weights = weights_copy(self.model)
        self.log(
            f"{schedule.name} step {progress.step} loss {loss:.4f} val {score:.4f}{note} ({progress.seconds:.0f} s)"
        )
        self.folder.save(
            model=self.model.state_dict(),
            optimizer=self.optimizer.state_dict(),
            best_weights=self.best_weights,
            progress=asdict(progress),
            task=self.task.state(),
        )


def weights_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def train_task_steps(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    folder: TaskRunFolder,
    schedule: TaskSchedule,
    task: TaskCallbacks,
    settings: StepSettings,
    log=print,
) -> TaskProgress:
    """Train (or resume) until `schedule.steps` are taken; the model ends holding the best weights on
    validation. Returns the run's progress."""
    progress, best_weights = TaskProgress(), weights_copy(model)
    state = folder.load()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        best_weights, progress = state["best_weights"], TaskProgress(**state["progress"])
        task.restore(state["task"])
        log(f"resumed {schedule.name} at step {progress.step}")
    began = time.monotonic() - progress.seconds
    steps = _TaskSteps(model, optimizer, folder, schedule, task, progress, best_weights, began, log)
    run_steps(model, optimizer, range(progress.step, schedule.steps), steps, settings)
    model.load_state_dict(steps.best_weights)
    model.eval()
    return progress
