"""The algorithmic task runs' share of training (paper 001's Neural GPU tasks, paper 002's segment tasks):
a fixed number of steps on freshly generated batches, validation every `eval_every` steps, the best weights
on validation kept, and everything a resumed run needs saved in its run folder at every validation. Each
task run gives its batches, validation and extra state as `TaskCallbacks`; the steps themselves are
training.loop.steps's.

Under torchrun (training.loop.distributed) every rank generates each step's whole batch and trains on its
rows rank::N of it; the ranks hold the same weights, so each validates and follows the curriculum as the
others do, and rank 0 alone logs and saves."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from training.loop.distributed import ONE_PROCESS, Ranks
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

    def loss(self, step: int, rows: Sequence[int]) -> tuple[torch.Tensor, int]:
        """(the training loss, a mean over `count` target tokens; count) of 0-based step `step` on the rows
        `rows` (non-empty) of a batch generated from the run's data seed and the step, padded as the whole
        batch is."""
        raise NotImplementedError

    def validate(self) -> tuple[float, list[float], str]:
        """(validation score, higher is better; extra curve columns; a note for the log line)."""
        raise NotImplementedError

    def after_step(self, step: int, ranks: Ranks) -> None:
        """Anything the task does after a step besides validation (the Neural GPU's curriculum: its decisions
        `ranks.from_main`)."""

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
    batch_size: int  # rows of every step's batch, over all ranks


class _TaskSteps:
    """The step loop's callbacks for a task run: this rank's rows of each batch, progress, validation cadence,
    best weights, saving."""

    def __init__(self, model, optimizer, folder, schedule, task, progress, best_weights, began, log, ranks):
        self.model, self.optimizer, self.folder, self.schedule, self.task = model, optimizer, folder, schedule, task
        self.progress, self.best_weights, self.began, self.log = progress, best_weights, began, log
        self.ranks: Ranks = ranks

    def loss(self, step: int) -> torch.Tensor:
        """This rank's loss, weighted by its share of the batch's target tokens."""
        share = self.ranks.share(self.schedule.batch_size)
        if not share.rows:  # a batch smaller than the world: nothing here, but this rank joins the collectives
            self.ranks.total(0)  # of the others' `part`
            return torch.zeros((), requires_grad=True)
        loss, count = self.task.loss(step, share.rows)
        return self.ranks.part(loss, count)

    def after_step(self, step: int, loss: float) -> None:
        progress, schedule = self.progress, self.schedule
        progress.step = step + 1
        self.task.after_step(step, self.ranks)
        if progress.step % schedule.eval_every and progress.step != schedule.steps:
            return
        self.model.eval()
        score, extra, note = self.task.validate()
        score = self.ranks.from_main(score)  # the kept weights are the same on every rank
        progress.seconds = time.monotonic() - self.began
        loss = self.ranks.total(loss)  # the whole batch's
        progress.curve.append([progress.step, round(loss, 4), round(score, 4), *extra])
        if score > progress.best or (schedule.keep_ties and score == progress.best):
            progress.best, progress.best_step = score, progress.step
            self.best_weights = weights_copy(self.model)
        if not self.ranks.main:
            return
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
    ranks: Ranks = ONE_PROCESS,
) -> TaskProgress:
    """Train (or resume) until `schedule.steps` are taken; the model ends holding the best weights on
    validation. Returns the run's progress. `ranks`: this process's share of a data-parallel run."""
    progress, best_weights = TaskProgress(), weights_copy(model)
    log = log if ranks.main else lambda message: None
    state = folder.load()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        best_weights, progress = state["best_weights"], TaskProgress(**state["progress"])
        task.restore(state["task"])
        log(f"resumed {schedule.name} at step {progress.step}")
    ranks.same_start(model)
    settings = replace(settings, gradient_hook=ranks.gradient_hook(settings.gradient_hook))
    began = time.monotonic() - progress.seconds
    steps = _TaskSteps(model, optimizer, folder, schedule, task, progress, best_weights, began, log, ranks)
    run_steps(model, optimizer, range(progress.step, schedule.steps), steps, settings)
    model.load_state_dict(steps.best_weights)
    model.eval()
    return progress
