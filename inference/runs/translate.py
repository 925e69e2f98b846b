"""Batched translation of many sentences, in their order: what evaluation,
lesion sweeps, uploaded corpora and the memory-content analyses all run.
Each batch is translated by the model's family (`Family.translate`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch
from torch import nn

from inference.core.capabilities import config_of
from inference.core.decoding import pad_batch
from inference.core.family import family_of
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
    family = family_of(config_of(model).family)
    translations = [""] * len(sources)
    for i, (rows, src_ids) in enumerate(length_sorted_batches(model, tokenizer, sources, batch_size)):
        outputs = family.translate(model, src_ids, interventions, MAX_NEW_TOKENS, SEED + i)
        for row, tokens in zip(rows, outputs):
            translations[row] = tokenizer.decode(tokens)
        if on_batch:
            on_batch(len(rows))
    return translations


def length_sorted_batches(
    model: nn.Module, tokenizer: TextTokenizer, sources: Sequence[str], batch_size: int
) -> Iterator[tuple[list[int], torch.Tensor]]:
    """(row indices, padded source ids [b, n]) with similar lengths per batch: less padding."""
    model.eval()
    device = next(model.parameters()).device
    ids = tokenizer.encode_sources(list(sources))
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        yield rows, pad_batch([ids[i] for i in rows], tokenizer.pad_id, device)
