"""Batched translation of many sentences, in their order: what evaluation,
lesion sweeps, uploaded corpora and the memory-content analyses all run.
Memory Transformer families decode greedily; a working-memory model
generates memory and translation together (`inference.wm_decoding`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import torch

from inference.decoding import greedy_decode, pad_batch, strip_after_eos
from inference.interventions import Interventions
from inference.models import Model
from inference.models.working_memory import WorkingMemoryTransformer
from inference.tokenizer import TextTokenizer
from inference.wm_decoding import WMExample, wm_generate

BATCH_SIZE = 128
MAX_NEW_TOKENS = 100  # Multi30k captions are far shorter; this only bounds a model that never says EOS
WM_SEED = 0  # memory sampling seed of batch i is WM_SEED + i, so a corpus run is reproducible


def translate_all(
    model: Model,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    batch_size: int = BATCH_SIZE,
    interventions: Interventions | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> list[str]:
    """Translations of `sources`; `on_batch(n)` after each batch of n."""
    if isinstance(model, WorkingMemoryTransformer):
        return [
            tokenizer.decode(example.translation)
            for example in wm_generate_all(model, tokenizer, sources, batch_size, interventions, on_batch)
        ]
    translations = [""] * len(sources)
    for rows, src_ids in _length_sorted_batches(model, tokenizer, sources, batch_size):
        generated = greedy_decode(model, src_ids, interventions, MAX_NEW_TOKENS)  # [b, steps]
        for row, tokens in zip(rows, strip_after_eos(generated.cpu(), tokenizer.eos_id)):
            translations[row] = tokenizer.decode(tokens)
        if on_batch:
            on_batch(len(rows))
    return translations


def wm_generate_all(
    model: WorkingMemoryTransformer,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    batch_size: int = BATCH_SIZE,
    interventions: Interventions | None = None,
    on_batch: Callable[[int], None] | None = None,
    seed: int = WM_SEED,
) -> list[WMExample]:
    """Memory and translation of every source, in the order of `sources`."""
    examples: list[WMExample | None] = [None] * len(sources)
    budget = MAX_NEW_TOKENS + model.config.max_memory_size  # the stream holds memory besides the translation
    for i, (rows, src_ids) in enumerate(_length_sorted_batches(model, tokenizer, sources, batch_size)):
        generation = wm_generate(model, src_ids, interventions, seed=seed + i, max_new_tokens=budget)
        for row, example in zip(rows, generation.examples):
            examples[row] = example
        if on_batch:
            on_batch(len(rows))
    return examples


def _length_sorted_batches(
    model: Model, tokenizer: TextTokenizer, sources: Sequence[str], batch_size: int
) -> Iterator[tuple[list[int], torch.Tensor]]:
    """(row indices, padded source ids [b, n]) with similar lengths per batch: less padding."""
    model.eval()
    device = next(model.parameters()).device
    ids = tokenizer.encode_sources(list(sources))
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        yield rows, pad_batch([ids[i] for i in rows], tokenizer.pad_id, device)
