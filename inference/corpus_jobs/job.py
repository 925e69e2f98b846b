"""A job over a corpus, in one shape for every executor: its batches, what the model gives for one batch, and a
partial state that gathers what the batches give (`update`), joins another shard's state (`merge`) and gives the
job's result (`finalize`).

An executor decides where batches run: `run_in_process` runs them in order here (the default, what a single
server and the CLI do); `inference.corpus_jobs.ray_executor.RayExecutor` runs contiguous shards of them on Ray
actors that each hold the model, and merges the actors' states in shard order. The batches are the ones a single
process would run, each with its own seed, and every merge is exact (the states' docs say how), so a job's result
does not depend on how many workers ran it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, Self

from inference.core.family import LoadedModel


class PartialState(Protocol):
    def update(self, observed: Any) -> None:
        """Take in what the model gave for one batch (the job's `observe`)."""

    def merge(self, other: Self) -> Self:
        """This state followed by `other`, a state of the batches after this one's (shard order)."""

    def finalize(self) -> Any:
        """The job's result from the state of all its batches."""


# (the model, the batch's number in the job, the batch) -> what the model gives for it
Observe = Callable[[LoadedModel, int, Any], Any]


@dataclass(frozen=True)
class CorpusJob:
    """A corpus job: `batches` in the order a single process runs them, `observe` (runs the model on one batch, on
    whichever worker holds it) and `empty` (a new partial state). Everything here is picklable: it travels to the
    workers, the model does not."""

    batches: Sequence[Any]
    observe: Observe
    empty: Callable[[], PartialState]


def run_shard(
    job: CorpusJob,
    loaded: LoadedModel,
    numbers: Sequence[int],
    on_batch: Callable[[int], None] | None = None,
    hold: Callable[[Callable[[], Any]], Any] | None = None,
    start: PartialState | None = None,
) -> PartialState:
    """The partial state of the job's batches `numbers` (ascending), run here in order, gathered into `start` (the
    state of the batches before them, as a resumed run saved it) or a new state. `on_batch(n)` after the n-th of
    them (it may raise to stop the job); `hold` runs each batch's model work (a server passes its inference lock's,
    so that interactive requests get the model between batches)."""
    state = job.empty() if start is None else start
    for done, number in enumerate(numbers, start=1):
        observe = partial(job.observe, loaded, number, job.batches[number])
        state.update(observe() if hold is None else hold(observe))
        if on_batch is not None:
            on_batch(done)
    return state


def run_in_process(
    job: CorpusJob,
    loaded: LoadedModel,
    on_batch: Callable[[int], None] | None = None,
    hold: Callable[[Callable[[], Any]], Any] | None = None,
) -> Any:
    """The job's result, all its batches run here in order (run_shard's `on_batch` and `hold`)."""
    return run_shard(job, loaded, range(len(job.batches)), on_batch, hold).finalize()


def contiguous_shards(batches: int, shards: int) -> list[range]:
    """`batches` batch numbers cut into at most `shards` contiguous runs of near-equal length, in order."""
    shards = max(1, min(shards, batches))
    bounds = [round(batches * k / shards) for k in range(shards + 1)]
    return [range(bounds[k], bounds[k + 1]) for k in range(shards)]
