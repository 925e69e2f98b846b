"""How a working-memory model trains (paper 004, Algorithm 1): during the first `plain_epochs` the decoder
stream is the target alone (every element target-type), so the model trains as a plain Transformer;
afterwards the stream is built with model-chosen memory tokens and the loss is `wm_training_forward`'s
(target tokens plus the type head's self-supervised labels). A run may start from a trained Transformer
(`from_transformer`): Algorithm 1's warm-up, done."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import torch
from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass
from torch import nn

from inference.core.capabilities import config_of
from inference.core.family import build_model, config_from_dict
from inference.core.losses import StepObjective, token_cross_entropy
from inference.core.memory_decisions import TARGET_TYPE
from inference.families.working_memory.generation import wm_training_forward
from inference.families.working_memory.model import WorkingMemoryTransformer

NEW_WEIGHTS = {"type_embed.weight", "type_head.weight", "type_head.bias"}  # what a Transformer lacks
WARM_START_FIELDS = ("family", "memory_size", "top_p")  # what a working memory adds to a Transformer's sizes


@dataclass(config=ConfigDict(extra="forbid"))
class WorkingMemoryTraining:
    """The training config's "working_memory" section: Algorithm 1's settings."""

    plain_epochs: int = Field(default=0, ge=0)  # first epochs as a plain Transformer: every element a target token
    type_threshold: float = Field(
        default=0.25, gt=0, lt=1
    )  # gold-token probability below which a position is a memory candidate
    type_loss_weight: float = Field(default=0.5, ge=0)  # loss = target loss + weight x type-head loss


def working_memory_loss(model: WorkingMemoryTransformer, batch: Any, objective: StepObjective) -> torch.Tensor:
    """The loss of one step; objective.options: Algorithm 1's settings (plain_epochs, type_threshold,
    type_loss_weight), or None for the plain loss throughout."""
    settings = objective.options
    if settings is None or objective.epoch < settings.plain_epochs:
        types = torch.full_like(batch.tgt_in, TARGET_TYPE)  # [b, t]: no memory in the stream
        logits, _ = model(batch.src_ids, batch.tgt_in, types)  # [b, t, vocab]
        return token_cross_entropy(logits, batch.tgt_out, model.config.pad_id, objective.label_smoothing)
    pad = model.config.pad_id
    targets = [[t for t in row if t != pad] for row in batch.tgt_out.tolist()]  # target + EOS per example
    out = wm_training_forward(
        model,
        batch.src_ids,
        targets,
        seed=objective.seed,
        type_threshold=settings.type_threshold,
        type_loss_weight=settings.type_loss_weight,
        label_smoothing=objective.label_smoothing,
        share=objective.share,
    )
    share = objective.share
    if share is None:
        return out.loss
    # A part of a data-parallel step's global batch: the step loop weights the loss by the part's share of the
    # global batch's target tokens, which makes the target loss (their mean) its part of the global mean. The type
    # loss is a mean over the labelled positions instead, so it is rescaled to become, after that weighting, its
    # part of their global mean.
    target_tokens = sum(len(t) for t in targets)
    labelled = int((out.type_labels != -100).sum())
    rescale = (labelled / share.total(labelled)) / (target_tokens / share.total(target_tokens))
    return out.target_loss + settings.type_loss_weight * out.type_loss * rescale


PLAIN_TRANSFORMER = ("memory_transformer", "transformer")  # (family, variant) of the Transformer it starts from


def from_transformer(transformer: nn.Module, working_memory_fields: dict[str, Any]) -> WorkingMemoryTransformer:
    """A working-memory model with a plain Transformer's sizes and weights: only the type embedding (zero) and
    the type head are new. Raises ValueError for any other source."""
    source_config = config_of(transformer)
    source_kind = (source_config.family, getattr(source_config, "variant", None))
    if source_kind != PLAIN_TRANSFORMER:
        raise ValueError(
            "a working-memory model can start from a plain Transformer checkpoint (family "
            f"{PLAIN_TRANSFORMER[0]}, variant {PLAIN_TRANSFORMER[1]}), not from {'/'.join(map(str, source_kind))}"
        )
    sizes = {k: v for k, v in asdict(source_config).items() if k not in ("family", "variant", "memory_size")}
    model = build_model(config_from_dict({**sizes, **working_memory_fields}))  # fields name the working-memory family
    if not isinstance(model, WorkingMemoryTransformer):
        raise ValueError(f"the fields name a {type(model).__name__}, not a working-memory model")
    missing, unexpected = model.load_state_dict(transformer.state_dict(), strict=False)
    if set(missing) != NEW_WEIGHTS or any(p.numel() for n, p in transformer.state_dict().items() if n in unexpected):
        raise ValueError(
            "the Transformer checkpoint does not fit a working-memory model: "
            f"missing {missing}, unexpected {unexpected}"
        )
    return model
