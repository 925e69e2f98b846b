"""The epoch loop of translation and language-model runs: Adam with the Noam schedule, the loss the model's
family trains (Family.training_loss), gradient clipping; resumable at any step. Each epoch's steps are taken
by the one step loop (training.loop.steps) with `EpochSteps` as its callbacks.

Hyper-parameters follow the paper's backbone (REFERENCE.md, Memory
Transformer): Adam betas 0.9/0.98, eps 1e-9, lr = d_model^-0.5 *
min(step^-0.5, step * warmup^-1.5).

The loop reads a task's data through `LoopData`: translation pairs
(`TrainingData`, here) or a language-model corpus
(`training.data.lm_streams.LanguageModelData`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch
from torch import nn
from tqdm import tqdm

from inference.core.family import family_of_model
from inference.core.losses import StepObjective
from inference.core.tokenizer import TextTokenizer
from training.data.lm_streams import LMBatch
from training.data.translation import Batch, Example, Pair, bucketed_batches, make_batch
from training.evaluation.translation import bleu_and_chrf
from training.loop.config import LoopConfig
from training.loop.distributed import ONE_PROCESS, Ranks
from training.loop.run_dir import Progress, RunDir
from training.loop.steps import StepSettings, run_steps

LOG_EVERY_STEPS = 100


class LoopData(Protocol):
    """A task's training and validation data, as the loop reads it."""

    def epoch_batches(self, batch_size: int, seed: int) -> list[list[int]]:
        """The epoch's batches as lists of indices into the training data; the same for the same seed."""

    def train_batch(self, indices: list[int], tokenizer: TextTokenizer) -> Batch | LMBatch: ...

    def val_batches(self, batch_size: int, tokenizer: TextTokenizer) -> Iterator[Batch | LMBatch]: ...

    def validation_bleu(self, model: nn.Module, tokenizer: TextTokenizer) -> float | None:
        """None for a task without translations."""


@dataclass
class TrainingData:
    """Translation pairs."""

    train: list[Example]
    val: list[Example]  # for the validation loss
    val_pairs: list[Pair]  # raw text, for the validation BLEU

    def epoch_batches(self, batch_size: int, seed: int) -> list[list[int]]:
        return bucketed_batches(self.train, batch_size, seed)

    def train_batch(self, indices: list[int], tokenizer: TextTokenizer) -> Batch:
        return make_batch([self.train[i] for i in indices], tokenizer)

    def val_batches(self, batch_size: int, tokenizer: TextTokenizer) -> Iterator[Batch]:
        for indices in bucketed_batches(self.val, batch_size, seed=0):
            yield make_batch([self.val[i] for i in indices], tokenizer)

    def validation_bleu(self, model: nn.Module, tokenizer: TextTokenizer) -> float:
        return bleu_and_chrf(model, tokenizer, self.val_pairs, desc="val BLEU")[0]


def noam_lr(step: int, d_model: int, warmup_steps: int) -> float:
    """Learning rate of optimiser step `step` (1-based): linear warmup, then step^-0.5 decay."""
    return d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def make_optimizer(model: nn.Module) -> torch.optim.Adam:
    # lr is set before every step from the schedule.
    return torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)


def batch_loss(model: nn.Module, batch: Batch | LMBatch, objective: StepObjective) -> torch.Tensor:
    """The loss the model's family trains on `batch` (Family.training_loss)."""
    return family_of_model(model).training_loss(model, batch, objective)


@torch.no_grad()
def validation_loss(
    model: nn.Module, tokenizer: TextTokenizer, data: LoopData, settings: LoopConfig, objective: StepObjective
) -> float:
    """Token-weighted mean of the training objective on the validation data,
    without dropout; the same label smoothing keeps it comparable with the
    train curve."""
    model.eval()
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    for batch in data.val_batches(settings.batch_size, tokenizer):
        batch = batch.to(device)
        n = batch.n_targets(tokenizer.pad_id)
        total += batch_loss(model, batch, replace(objective, seed=0)).item() * n
        tokens += n
    return total / tokens


def train(
    model: nn.Module,
    tokenizer: TextTokenizer,
    settings: LoopConfig,
    data: LoopData,
    run: RunDir,
    max_steps: int | None = None,
    schedule_offset: int = 0,
    family_options: Any = None,
    first_candidate_epoch: int = 0,
    ranks: Ranks = ONE_PROCESS,
) -> Progress:
    """Train until settings.epochs are done or the run has taken settings.max_steps or max_steps (this session's
    stop) steps, resuming from the run directory's state if it holds one.

    schedule_offset: steps the model was already trained in the run it was
    initialised from; the Noam schedule continues from there instead of
    warming up a trained model a second time.
    family_options: the family's own section of the training config, handed to its loss (StepObjective.options).
    first_candidate_epoch: epochs before it are not candidates for the checkpoint (a working-memory model's
    plain epochs: their weights have never written memory).
    ranks: this process's share of a data-parallel run (training.loop.distributed); only rank 0 writes.
    """
    optimizer = make_optimizer(model)
    progress = run.load_state(model, optimizer)
    ranks.same_start(model)
    log = run.log if ranks.main else lambda message: None
    if progress is None:
        progress = Progress()
        log(f"start: {sum(p.numel() for p in model.parameters())} parameters; epochs: {settings.epochs}")
    else:
        log(
            f"resume at step {progress.step}: {progress.epoch} epochs done, "
            f"{progress.batch_in_epoch} batches into the next"
        )
    session = Session(progress, ranks)
    if progress.epoch < settings.epochs:
        progress.trained_on(next(model.parameters()).device)
    while progress.epoch < settings.epochs:
        # Each epoch's batch order follows from the seed and the epoch number
        # alone, so a resumed run continues the very same sequence of batches.
        batches = data.epoch_batches(settings.batch_size, seed=settings.seed + progress.epoch)
        objective = StepObjective(settings.label_smoothing, progress.epoch, options=family_options)
        epoch = EpochSteps(
            model, tokenizer, optimizer, settings, data, batches, run, session, objective, schedule_offset
        )
        if not epoch.run(settings.step_limit(max_steps)):
            session.save(run, model, optimizer)
            ended = "end at the run's" if settings.finished(progress.epoch, progress.step) else "stop at"
            log(f"{ended} max_steps {settings.step_limit(max_steps)}: {session.seconds_per_step():.3f} s/step "
                "in this session")  # fmt: skip
            return progress
        end_epoch(
            model, tokenizer, settings, data, progress, objective, progress.epoch >= first_candidate_epoch, ranks.main
        )
        session.save(run, model, optimizer)
        if not ranks.main:  # the epoch's validation, best weights and log line are rank 0's alone
            continue
        validated = progress.val_bleu_epochs[-1:] == [progress.epoch]
        if validated and progress.best_val_epoch() == progress.epoch:
            run.save_best(model, progress)
        val_bleu = f", val BLEU {progress.val_bleu[-1]:.2f}" if validated else ""
        log(
            f"epoch {progress.epoch}: train loss {progress.loss_curve[-1]:.4f}, val loss {progress.val_loss[-1]:.4f}"
            f"{val_bleu}, {session.seconds_per_step():.3f} s/step"
        )
    return progress


class Session:
    """Timing of this process's share of the run; the run's total training
    time accumulates in Progress.seconds across resumed sessions."""

    def __init__(self, progress: Progress, ranks: Ranks = ONE_PROCESS):
        self.progress = progress
        self.ranks = ranks
        self.start_time = time.monotonic()
        self.start_seconds = progress.seconds
        self.start_step = progress.step

    def seconds_per_step(self) -> float:
        return (time.monotonic() - self.start_time) / max(self.progress.step - self.start_step, 1)

    def save(self, run: RunDir, model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
        """The resumable state, written by rank 0 alone (every rank holds the same)."""
        self.progress.seconds = self.start_seconds + time.monotonic() - self.start_time
        if self.ranks.main:
            run.save_state(model, optimizer, self.progress)


class EpochSteps:
    """One epoch of a translation or language-model run, as callbacks of the step loop (training.loop.steps):
    the epoch's batches not yet trained, the Noam schedule, progress, logging and periodic saves."""

    def __init__(self, model, tokenizer, optimizer, settings, data, batches, run, session, objective, schedule_offset):
        self.model, self.tokenizer, self.optimizer, self.settings = model, tokenizer, optimizer, settings
        self.data, self.batches, self.run_dir, self.session, self.objective = data, batches, run, session, objective
        self.schedule_offset = schedule_offset  # steps of the run the model was initialised from (Noam schedule)
        self.progress: Progress = session.progress
        self.device = next(model.parameters()).device
        self.batch: Batch | LMBatch | None = None
        self.targets = 0  # target tokens of the whole global batch of the step under way
        self.bar = None

    def run(self, max_steps: int | None) -> bool:
        """Train on the batches of this epoch not yet trained; False if stopped by max_steps."""
        progress = self.progress
        remaining = len(self.batches) - progress.batch_in_epoch
        allowed = remaining if max_steps is None else max(0, min(remaining, max_steps - progress.step))
        ranks = self.session.ranks
        self.bar = tqdm(
            desc=f"epoch {progress.epoch + 1}/{self.settings.epochs}",
            initial=progress.batch_in_epoch,
            total=len(self.batches),
            disable=not ranks.main,
        )
        steps = StepSettings(self.settings.clip_norm, self.learning_rate, ranks.gradient_hook())
        try:
            run_steps(self.model, self.optimizer, range(progress.step, progress.step + allowed), self, steps)
        finally:
            self.bar.close()
            self.bar = None
        return allowed == remaining

    def learning_rate(self, step: int) -> float:
        return noam_lr(self.schedule_offset + step + 1, self.model.config.d_model, self.settings.warmup_steps)

    def loss(self, step: int) -> torch.Tensor:
        """The step's loss on this rank's share of the global batch, weighted by its share of the batch's target
        tokens (the ranks' weighted losses, summed, are the loss on the whole batch)."""
        ranks = self.session.ranks
        indices = self.batches[self.progress.batch_in_epoch]
        whole = self.data.train_batch(indices, self.tokenizer)
        share = ranks.share(len(indices))
        self.batch = None if not share.rows else (whole if ranks.world == 1 else whole.rows(share.rows)).to(self.device)
        targets = 0 if self.batch is None else self.batch.n_targets(self.tokenizer.pad_id)
        self.targets = int(ranks.total(targets))
        if self.batch is None:  # a last batch smaller than the world: nothing here, the gradient sum still runs
            return torch.zeros((), requires_grad=True)
        # The step number seeds the step's memory sampling: a resumed run draws the same.
        objective = replace(
            self.objective, seed=self.settings.seed * 1_000_003 + step, share=share if ranks.world > 1 else None
        )
        return ranks.part(batch_loss(self.model, self.batch, objective), targets, self.targets)

    def after_step(self, step: int, loss: float) -> None:
        progress, lr = self.progress, self.learning_rate(step)
        loss = self.session.ranks.total(loss)  # the whole batch's
        n = self.targets
        progress.epoch_loss_sum += loss * n
        progress.epoch_tokens += n
        progress.step += 1
        progress.batch_in_epoch += 1
        if self.bar is not None:  # the progress bar of run(); a step outside it shows nothing
            self.bar.update()
            self.bar.set_postfix(loss=f"{loss:.3f}", lr=f"{lr:.2e}")
        if progress.step % LOG_EVERY_STEPS == 0 and self.session.ranks.main:
            self.run_dir.log(
                f"step {progress.step}: loss {loss:.4f}, lr {lr:.3e}, {self.session.seconds_per_step():.3f} s/step"
            )
        if progress.step % self.settings.save_every_steps == 0:
            self.session.save(self.run_dir, self.model, self.optimizer)


def end_epoch(
    model: nn.Module,
    tokenizer: TextTokenizer,
    settings: LoopConfig,
    data: LoopData,
    progress: Progress,
    objective: StepObjective,
    candidate: bool = True,
    measured: bool = True,
) -> None:
    """Close the epoch in `progress`: its mean train loss, validation loss and
    (every settings.eval_every_epochs, for a task with translations, where the epoch's weights are a
    candidate for the checkpoint) validation BLEU. measured False: the epoch closed without validating (a rank
    of a torchrun run other than rank 0, which alone logs, keeps the best weights and saves)."""
    progress.loss_curve.append(progress.epoch_loss_sum / max(progress.epoch_tokens, 1))
    if measured:
        progress.val_loss.append(validation_loss(model, tokenizer, data, settings, objective))
    progress.epoch += 1
    progress.batch_in_epoch, progress.epoch_loss_sum, progress.epoch_tokens = 0, 0.0, 0
    if measured and candidate and progress.epoch % settings.eval_every_epochs == 0:
        bleu = data.validation_bleu(model, tokenizer)
        if bleu is not None:
            progress.val_bleu_epochs.append(progress.epoch)
            progress.val_bleu.append(bleu)
