"""Corpus jobs on Ray (the optional `ray` extra): one actor per device loads the model from its checkpoint folder
and runs contiguous shards of a job's batches into partial states; the driver merges the states in shard order
and finalizes them (inference.corpus_jobs.job). The result equals the job run in one process.

Ray joins the cluster at RAY_ADDRESS, else starts a local one (`address="local"`, never a stale cluster found on
the machine). Starting Ray costs seconds and memory (12-17 s and about 770 MB on a 2-core machine): an executor
starts it once, for the jobs of a process, never per request; its actors (and their models) live as long as it."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import reduce
from pathlib import Path
from typing import Any

from inference.core.checkpoint import load_checkpoint
from inference.corpus_jobs.job import CorpusJob, PartialState, contiguous_shards, run_shard

SHARDS_PER_ACTOR = 2  # finer shards even out actors that finish at different speeds


class ShardRunner:
    """A Ray actor: the model of one checkpoint on one device, running shards of corpus jobs."""

    def __init__(self, folder: str, device: str):
        self.loaded = load_checkpoint(Path(folder), device)

    def run(self, job: CorpusJob, numbers: list[int]) -> PartialState:
        return run_shard(job, self.loaded, numbers)


def start_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Join RAY_ADDRESS's cluster (or `address`), else start a local one; nothing if this process has joined."""
    import ray

    if not ray.is_initialized():
        local = address is None and not os.environ.get("RAY_ADDRESS")
        ray.init(
            address=address or os.environ.get("RAY_ADDRESS") or "local",
            num_cpus=num_cpus if local else None,
            include_dashboard=False,
            log_to_driver=False,
        )


class RayExecutor:
    def __init__(self, folder: Path, devices: Sequence[str], shards_per_actor: int = SHARDS_PER_ACTOR):
        """Actors for the checkpoint at `folder`, one per entry of `devices` ("cpu", "cuda:0", ...); Ray must be
        started (start_ray)."""
        import ray

        actor = ray.remote(ShardRunner)
        self.actors: list[Any] = [  # Ray's actor handles
            actor.options(num_cpus=1, num_gpus=1 if device.startswith("cuda") else 0).remote(str(folder), device)
            for device in devices
        ]
        self.shards_per_actor = shards_per_actor

    def run(self, job: CorpusJob, on_shard: Callable[[int, int], None] | None = None) -> Any:
        """The job's result. on_shard(shards merged, shards) as each shard's state arrives, in shard order."""
        import ray

        shards = contiguous_shards(len(job.batches), len(self.actors) * self.shards_per_actor)
        shipped = ray.put(job)  # sent once to each node, not once per shard
        pending = [
            self.actors[k % len(self.actors)].run.remote(shipped, list(numbers)) for k, numbers in enumerate(shards)
        ]
        states = []
        for k, future in enumerate(pending):
            states.append(ray.get(future))
            if on_shard is not None:
                on_shard(k + 1, len(shards))
        return reduce(lambda earlier, later: earlier.merge(later), states).finalize()

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
