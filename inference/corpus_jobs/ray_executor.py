"""Corpus jobs on Ray (the optional `ray` extra): one actor per device loads the model from its checkpoint folder
and runs contiguous shards of a job's batches into partial states; the driver merges the states in shard order
and finalizes them (inference.corpus_jobs.job). The result equals the job run in one process.

Ray joins the cluster at RAY_ADDRESS, else starts a local one (`address="local"`, never a stale cluster found on
the machine). Starting Ray costs seconds and memory (3-17 s and 640-770 MB on a 2-core machine): a process starts it
once, at its first corpus job, never per request. An executor's actors (each loading the model) live as long as the
executor: a server makes one per job."""

from __future__ import annotations

import os
from collections.abc import Callable
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
    def __init__(self, folder: Path, workers: int, on_gpus: bool, shards_per_actor: int = SHARDS_PER_ACTOR):
        """`workers` actors for the checkpoint at `folder`; with `on_gpus`, they share the cluster's GPUs (Ray gives
        each its share and makes it the actor's "cuda"), else each takes a CPU. Ray must be started (start_ray).
        ValueError where the cluster lacks what the actors need (they would wait for it for ever)."""
        import ray

        resources = ray.cluster_resources()
        gpus = resources.get("GPU", 0) if on_gpus else 0
        if on_gpus and gpus == 0:
            raise ValueError("the Ray cluster has no GPU for the job's workers")
        if not on_gpus and workers > resources.get("CPU", 0):
            raise ValueError(f"{workers} Ray workers asked; the Ray cluster has {resources.get('CPU', 0):g} CPUs")
        share = min(1.0, gpus / workers) if on_gpus else 0
        actor = ray.remote(ShardRunner)
        self.actors: list[Any] = [  # Ray's actor handles
            actor.options(num_cpus=0 if on_gpus else 1, num_gpus=share).remote(
                str(folder), "cuda" if on_gpus else "cpu"
            )
            for _ in range(workers)
        ]
        self.shards_per_actor = shards_per_actor

    def run(
        self,
        job: CorpusJob,
        on_shard: Callable[[int, int], None] | None = None,
        tick: Callable[[], None] | None = None,
        tick_seconds: float = 1.0,
    ) -> Any:
        """The job's result. on_shard(shards merged, shards) as each shard's state arrives, in shard order; `tick`
        every `tick_seconds` while the driver waits (it may raise to stop the job: the shards left are cancelled)."""
        import ray

        shards = contiguous_shards(len(job.batches), len(self.actors) * self.shards_per_actor)
        shipped = ray.put(job)  # sent once to each node, not once per shard
        pending = [
            self.actors[k % len(self.actors)].run.remote(shipped, list(numbers)) for k, numbers in enumerate(shards)
        ]
        states = []
        try:
            for k, future in enumerate(pending):
                while not ray.wait([future], timeout=tick_seconds)[0]:
                    if tick is not None:
                        tick()
                states.append(ray.get(future))
                if on_shard is not None:
                    on_shard(k + 1, len(shards))
        except BaseException:
            for future in pending[len(states) :]:
                ray.cancel(future)
            raise
        return reduce(lambda earlier, later: earlier.merge(later), states).finalize()

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
