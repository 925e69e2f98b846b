"""Batched greedy translation of many sentences, in their order: what
evaluation, lesion sweeps and uploaded corpora all run."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inference.decoding import greedy_decode, pad_batch, strip_after_eos
from inference.interventions import Interventions
from inference.models.memory_transformer import MemoryTransformer
from inference.tokenizer import TextTokenizer

BATCH_SIZE = 128
MAX_NEW_TOKENS = 100  # Multi30k captions are far shorter; this only bounds a model that never says EOS


def translate_all(
    model: MemoryTransformer,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    batch_size: int = BATCH_SIZE,
    interventions: Interventions | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> list[str]:
    """Greedy translations of `sources`; `on_batch(n)` after each batch of n."""
    model.eval()
    device = next(model.parameters()).device
    ids = tokenizer.encode_sources(list(sources))
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths per batch: less padding
    translations = [""] * len(ids)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        src_ids = pad_batch([ids[i] for i in rows], tokenizer.pad_id, device)  # [b, n]
        generated = greedy_decode(model, src_ids, interventions, MAX_NEW_TOKENS)  # [b, steps]
        for row, tokens in zip(rows, strip_after_eos(generated.cpu(), tokenizer.eos_id)):
            translations[row] = tokenizer.decode(tokens)
        if on_batch:
            on_batch(len(rows))
    return translations
