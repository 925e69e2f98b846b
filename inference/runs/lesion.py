"""Memory-size lesions over a corpus: translation quality when the model runs
with a different number of memory slots ([mem] tokens, or working-memory
tokens the decoder may write) than it was trained with, and the working
memory's mask lesion."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from inference.analyses.quality import Quality, corpus_quality
from inference.core.controls import LesionControls, lesion_interventions
from inference.core.tokenizer import TextTokenizer
from inference.runs.translate import BATCH_SIZE, translate_all

PAPER_MEMORY_SIZES = (0, 2, 5, 10, 20, 30)  # inference memory sizes of Memory Transformer, Table 2


def lesion_sizes(trained: int, largest: int, sizes: Sequence[int] = PAPER_MEMORY_SIZES) -> list[int]:
    """The paper's sizes plus the trained one (so the curve shows the
    unlesioned model), up to the largest size the model allows."""
    return sorted(k for k in set(sizes) | {trained} if k <= largest)


def quality_at_memory_size(
    model: nn.Module,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    references: Sequence[str],
    memory_size: int | None,
    batch_size: int = BATCH_SIZE,
    mask_memory: bool = False,
) -> Quality:
    """Quality with `memory_size` memory (None: as trained), the working memory masked if asked."""
    lesion = lesion_interventions(LesionControls(memory_size=memory_size, mask_memory=mask_memory))
    translations = translate_all(model, tokenizer, sources, batch_size, lesion)
    return corpus_quality(translations, references)
