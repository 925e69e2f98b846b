"""Which memory sizes a memory-size lesion sweep runs: the model run with a different number of memory slots
([mem] tokens, or working-memory tokens the decoder may write) than it was trained with. The sweep itself is one
corpus job (inference.corpus_jobs.states.sweep_job), which the app, the CLI and training all run."""

from __future__ import annotations

from collections.abc import Sequence

PAPER_MEMORY_SIZES = (0, 2, 5, 10, 20, 30)  # inference memory sizes of Memory Transformer, Table 2


def lesion_sizes(trained: int, largest: int, sizes: Sequence[int] = PAPER_MEMORY_SIZES) -> list[int]:
    """The paper's sizes plus the trained one (so the curve shows the
    unlesioned model), up to the largest size the model allows."""
    return sorted(k for k in set(sizes) | {trained} if k <= largest)
