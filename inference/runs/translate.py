"""Batched translation of many sentences, in their order: what evaluation,
lesion sweeps, uploaded corpora and the memory-content analyses all run.
Each batch is translated by the model's family (`Family.translate`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
from torch import nn

from inference.core.decoding import pad_batch
from inference.core.family import family_of_model
from inference.core.interventions import Interventions
from inference.core.tokenizer import TextTokenizer

BATCH_SIZE = 128
MAX_NEW_TOKENS = 100  # Multi30k captions are far shorter; this only bounds a model that never says EOS
SEED = 0  # a family that samples uses seed SEED + i for batch i, so a corpus run is reproducible


def translate_all(
    model: nn.Module,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    batch_size: int = BATCH_SIZE,
    interventions: Interventions | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> list[str]:
    """Translations of `sources`; `on_batch(n)` after each batch of n."""
    translations = [""] * len(sources)
    for number, rows in enumerate(batch_plan(tokenizer, sources, batch_size)):
        for row, translation in translate_rows(model, tokenizer, sources, rows, number, interventions).items():
            translations[row] = translation
        if on_batch:
            on_batch(len(rows))
    return translations


def batch_plan(tokenizer: TextTokenizer, sources: Sequence[str], batch_size: int = BATCH_SIZE) -> list[list[int]]:
    """The rows of `sources` each batch translates, in order: similar lengths per batch (less padding). A corpus
    split across workers keeps this plan, so that every sentence is translated in the batch, and with the seed,
    it would be in one process."""
    lengths = [len(ids) for ids in tokenizer.encode_sources(list(sources))]
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def translate_rows(
    model: nn.Module,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    rows: list[int],
    number: int,
    interventions: Interventions | None = None,
) -> dict[int, str]:
    """row -> translation of one batch of the plan, batch `number` (a family that samples uses seed SEED + number)."""
    family = family_of_model(model)
    outputs = family.translate(
        model, padded_rows(model, tokenizer, sources, rows), interventions, MAX_NEW_TOKENS, SEED + number
    )
    return {row: tokenizer.decode(tokens) for row, tokens in zip(rows, outputs)}


def padded_rows(model: nn.Module, tokenizer: TextTokenizer, sources: Sequence[str], rows: list[int]) -> torch.Tensor:
    """Padded source ids [b, n] of `rows`, on the model's device; the model in eval mode."""
    model.eval()
    device = next(model.parameters()).device
    return pad_batch(tokenizer.encode_sources([sources[i] for i in rows]), tokenizer.pad_id, device)


def length_sorted_batches(
    model: nn.Module, tokenizer: TextTokenizer, sources: Sequence[str], batch_size: int
) -> Iterator[tuple[list[int], torch.Tensor]]:
    """(row indices, padded source ids [b, n]) of each batch of the plan."""
    for rows in batch_plan(tokenizer, sources, batch_size):
        yield rows, padded_rows(model, tokenizer, sources, rows)
