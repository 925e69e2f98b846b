"""The one step loop every training run takes: a run hands it callbacks (the loss of a step, what to do after
it) and the loop does the rest the same way for all of them — learning rate, backward pass, gradient hook,
clipping, optimiser step. Translation and language-model runs (training.loop.epochs) and the algorithmic
task runs (training.loop.task_steps) differ only in their callbacks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

import torch
from torch import nn

GradientHook = Callable[[nn.Module, int], None]  # (model, 0-based step): after backward, before clipping


class StepCallbacks(Protocol):
    def loss(self, step: int) -> torch.Tensor:
        """The scalar training loss of 0-based step `step`, on a batch drawn from the step alone (so a resumed
        run draws the same); the model is in training mode."""

    def after_step(self, step: int, loss: float) -> None:
        """Bookkeeping once step `step` is taken: progress, logging, validation, saving."""


@dataclass(frozen=True)
class StepSettings:
    clip_norm: float  # the gradient norm is clipped to this
    learning_rate: Callable[[int], float] | None = None  # 0-based step -> its rate; None keeps the optimiser's
    gradient_hook: GradientHook | None = None


def optimizer_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_of: Callable[[], torch.Tensor],
    settings: StepSettings,
    step: int,
) -> float:
    """One training step: the loss `loss_of()` computes with dropout on, backward, the gradient hook,
    clipping, the optimiser's step at the step's learning rate; returns the loss."""
    if settings.learning_rate is not None:
        for group in optimizer.param_groups:
            group["lr"] = settings.learning_rate(step)
    model.train()  # dropout on
    loss = loss_of()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if settings.gradient_hook is not None:
        settings.gradient_hook(model, step)
    torch.nn.utils.clip_grad_norm_(model.parameters(), settings.clip_norm)
    optimizer.step()
    return loss.item()


def run_steps(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    steps: Iterable[int],
    callbacks: StepCallbacks,
    settings: StepSettings,
) -> None:
    """Take the 0-based steps `steps` in order, each followed by its callback."""
    for step in steps:
        loss = optimizer_step(model, optimizer, partial(callbacks.loss, step), settings, step)
        callbacks.after_step(step, loss)
