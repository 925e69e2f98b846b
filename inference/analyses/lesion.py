"""Memory-size lesions over a corpus: translation quality when the model runs
with a different number of [mem] slots than it was trained with."""

from __future__ import annotations

from collections.abc import Sequence

from inference.analyses.quality import Quality, corpus_quality
from inference.interventions import Interventions
from inference.models.memory_transformer import MemoryTransformer
from inference.tokenizer import TextTokenizer
from inference.translate import BATCH_SIZE, translate_all

PAPER_MEMORY_SIZES = (0, 2, 5, 10, 20, 30)  # inference memory sizes of Memory Transformer, Table 2


def lesion_sizes(trained: int, sizes: Sequence[int] = PAPER_MEMORY_SIZES) -> list[int]:
    """The paper's sizes plus the trained one (so the curve shows the
    unlesioned model), up to the 3x trained that a model allows."""
    return sorted(k for k in set(sizes) | {trained} if k <= 3 * trained)


def quality_at_memory_size(
    model: MemoryTransformer, tokenizer: TextTokenizer, sources: Sequence[str], references: Sequence[str], memory_size: int, batch_size: int = BATCH_SIZE
) -> Quality:
    translations = translate_all(model, tokenizer, sources, batch_size, Interventions(memory_size=memory_size))
    return corpus_quality(translations, references)
