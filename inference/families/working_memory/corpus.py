"""Memory and translation of many sentences, in their order: what the
memory-content analyses and the app's corpus jobs read."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torch import nn

from inference.core.interventions import Interventions
from inference.core.tokenizer import TextTokenizer
from inference.families.working_memory.generation import WMExample, wm_generate
from inference.families.working_memory.model import WorkingMemoryTransformer
from inference.runs.translate import BATCH_SIZE, MAX_NEW_TOKENS, SEED, length_sorted_batches


def wm_generate_all(
    model: nn.Module,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    batch_size: int = BATCH_SIZE,
    interventions: Interventions | None = None,
    on_batch: Callable[[int], None] | None = None,
    seed: int = SEED,
) -> list[WMExample]:
    """Memory and translation of every source, in the order of `sources`; batch i samples with seed + i.
    `model`: a working-memory model (TypeError otherwise)."""
    if not isinstance(model, WorkingMemoryTransformer):
        raise TypeError(f"a {type(model).__name__} writes no working memory")
    examples: dict[int, WMExample] = {}  # row of `sources` -> its example
    for i, (rows, src_ids) in enumerate(length_sorted_batches(model, tokenizer, sources, batch_size)):
        generation = wm_generate(model, src_ids, interventions, seed=seed + i, max_new_tokens=stream_budget(model))
        for row, example in zip(rows, generation.examples):
            examples[row] = example
        if on_batch:
            on_batch(len(rows))
    return [examples[row] for row in range(len(sources))]


def stream_budget(model: WorkingMemoryTransformer, max_new_tokens: int = MAX_NEW_TOKENS) -> int:
    """Elements a stream may hold: the translation's budget plus the largest memory."""
    return max_new_tokens + model.config.max_memory_size
