"""What a training step minimises, in the pieces families share: the label-smoothed cross-entropy of
teacher-forced target tokens, and of the next token. Each family's `training_loss` picks its own
(inference.core.family); the training loop asks the family and names none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.capabilities import config_of


@dataclass(frozen=True)
class BatchShare:
    """One process's part of a data-parallel step's global batch (training.loop.distributed)."""

    rows: tuple[int, ...]  # the positions of this process's rows in the global batch
    size: int  # rows in the global batch
    total: Callable[[float], float]  # a count summed over every process's part


@dataclass(frozen=True)
class StepObjective:
    """What a family's loss may depend on besides the model and the batch."""

    label_smoothing: float
    epoch: int = 0  # 0-based epoch of the run: a family may train differently early on (working memory)
    seed: int = 0  # seeds the step's sampling, where the family samples while it trains
    options: Any = None  # the family's own section of the training config, e.g. working memory's Algorithm 1
    # Where the batch is a data-parallel process's part of the step's global batch (None: the whole of it). The
    # step loop weights the loss by the part's share of the global batch's target tokens, which makes a mean over
    # target tokens this part's share of the global mean; a family whose loss holds another mean, or that
    # samples per row, reads the share.
    share: BatchShare | None = None


def token_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, pad_id: int, label_smoothing: float
) -> torch.Tensor:  # logits [b, t, vocab], targets [b, t] -> scalar
    """Mean label-smoothed cross-entropy over the non-pad targets."""
    return F.cross_entropy(
        logits.flatten(0, 1), targets.flatten(), ignore_index=pad_id, label_smoothing=label_smoothing
    )


def teacher_forced_loss(model: nn.Module, batch: Any, label_smoothing: float) -> torch.Tensor:
    """A translation batch (src_ids [b, n], tgt_in [b, t] = BOS + target, tgt_out [b, t] = target + EOS) through
    a model whose forward(src_ids, tgt_in) gives logits [b, t, vocab]."""
    logits = model(batch.src_ids, batch.tgt_in)  # [b, t, vocab]
    return token_cross_entropy(logits, batch.tgt_out, config_of(model).pad_id, label_smoothing)


def next_token_loss(model: nn.Module, batch: Any, label_smoothing: float) -> torch.Tensor:
    """A language-model batch (ids [b, t], targets [b, t]: the next token of each) through forward(ids)."""
    return token_cross_entropy(model(batch.ids), batch.targets, config_of(model).pad_id, label_smoothing)
