"""What a training step minimises, per model family and epoch.

- Memory Transformer families: label-smoothed cross-entropy of the target
  tokens, teacher-forced.
- Working memory (paper 004, Algorithm 1): during the first `plain_epochs`
  the decoder stream is the target alone (every element target-type), so the
  model trains as a plain Transformer; afterwards the stream is built with
  model-chosen memory tokens and the loss is
  `inference.families.working_memory.generation.wm_training_forward`'s (target tokens plus the
  type head's self-supervised labels).
- Next-token models (the language model, the segment-recurrent decoders):
  next-token cross-entropy over every position of a block
  (label smoothing as configured; the shipped language-model configs use 0,
  so the loss is the log-perplexity).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.family import Capability, capabilities_of
from inference.families.working_memory.generation import wm_training_forward
from inference.families.working_memory.model import TARGET_TYPE
from training.data.lm_streams import LMBatch
from training.data.translation import Batch
from training.loop.config import WorkingMemoryTraining

# (model, batch, seed) -> scalar loss; the seed makes the step's sampling reproducible.
Objective = Callable[[nn.Module, Batch | LMBatch, int], torch.Tensor]


def token_loss(model: nn.Module, batch: Batch, label_smoothing: float) -> torch.Tensor:
    """Mean label-smoothed cross-entropy over the non-pad target tokens."""
    if Capability.WORKING_MEMORY in capabilities_of(model.config):
        logits, _ = model(
            batch.src_ids, batch.tgt_in, torch.full_like(batch.tgt_in, TARGET_TYPE)
        )  # no memory in the stream
    else:
        logits = model(batch.src_ids, batch.tgt_in)  # [b, t, vocab]
    return F.cross_entropy(
        logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=model.config.pad_id, label_smoothing=label_smoothing
    )


def next_token_loss(model: nn.Module, batch: LMBatch, label_smoothing: float) -> torch.Tensor:
    """Mean cross-entropy of the next token at every non-pad target."""
    logits = model(batch.ids)  # [b, t, vocab]
    return F.cross_entropy(
        logits.flatten(0, 1), batch.targets.flatten(), ignore_index=model.config.pad_id, label_smoothing=label_smoothing
    )


def objective_for_epoch(
    model: nn.Module, label_smoothing: float, working_memory: WorkingMemoryTraining | None, epoch: int
) -> Objective:
    """The objective of 0-based epoch `epoch`."""
    if Capability.NEXT_TOKEN in capabilities_of(model.config):
        return lambda model, batch, seed: next_token_loss(model, batch, label_smoothing)
    if working_memory is None or epoch < working_memory.plain_epochs:
        return lambda model, batch, seed: token_loss(model, batch, label_smoothing)

    def with_memory(model: nn.Module, batch: Batch, seed: int) -> torch.Tensor:
        pad = model.config.pad_id
        targets = [[t for t in row if t != pad] for row in batch.tgt_out.tolist()]  # target + EOS per example
        return wm_training_forward(
            model,
            batch.src_ids,
            targets,
            seed=seed,
            type_threshold=working_memory.type_threshold,
            type_loss_weight=working_memory.type_loss_weight,
            label_smoothing=label_smoothing,
        ).loss

    return with_memory
