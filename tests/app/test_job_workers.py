"""`memlens worker` processes sharing one queue, on SQLite and on a real PostgreSQL: two of them never run a job
twice, and when one is killed mid-job the other finishes its job once the lease runs out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

from app.services.store import Job, JobStore
from inference.core.checkpoint import load_checkpoint
from inference.core.tracing import run_with_trace
from tests.conftest import TINY_CORPUS

MODEL = "tiny_memtransformer"
LEASE_SECONDS = 2.0
GERMAN = TINY_CORPUS[0::2]


@contextmanager
def workers(count: int, store_url: str, checkpoint_dir, tmp_path):
    """`count` worker processes on the store; yields {worker name: process} once each has said it runs."""
    environment = {
        **os.environ,
        "MEMLENS_CHECKPOINT_DIR": str(checkpoint_dir),
        "MEMLENS_DATABASE_URL": store_url,
        "MEMLENS_DATA_DIR": str(tmp_path / "no-data"),
        "MEMLENS_JOB_LEASE_SECONDS": str(LEASE_SECONDS),
    }
    command = [sys.executable, "-m", "memlens_cli.main", "worker"]
    processes = [subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, text=True) for _ in range(count)]
    try:
        named = {}
        for process in processes:
            line = process.stdout.readline()  # "memlens worker NAME: running the jobs of URL"
            assert line.startswith("memlens worker "), line
            named[line.split()[2].rstrip(":")] = process
        yield named
    finally:
        for process in processes:
            process.terminate()
        stopped = [process.wait(timeout=60) for process in processes]
    assert all(code in (0, -signal.SIGKILL) for code in stopped), stopped  # SIGTERM: a clean exit


def corpus_job(store: JobStore, sources: list[str]) -> Job:
    params = {"model": MODEL, "filename": "corpus.txt", "sources": sources, "references": None}
    return store.create("corpus", params, total=len(sources))


def wait_for(condition, seconds: float = 180):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s")


def translation(checkpoint_dir, source: str) -> str:
    loaded = load_checkpoint(checkpoint_dir / MODEL, "cpu")
    return run_with_trace(loaded, source, names=["logits"]).outputs[0]


def test_two_workers_never_run_a_job_twice(store_url, checkpoint_dir, tmp_path):
    store = JobStore(store_url)
    with workers(2, store_url, checkpoint_dir, tmp_path) as running:
        jobs = [corpus_job(store, [GERMAN[n % len(GERMAN)]]) for n in range(100)]
        finished = [wait_for(lambda job=job: (found := store.get(job.id)).finished and found) for job in jobs]
    assert {job.status for job in finished} == {"done"}
    assert {job.attempts for job in finished} == {1}  # claimed once each: a second claim would count 2
    by_worker = {name: sum(job.worker == name for job in finished) for name in running}
    assert sum(by_worker.values()) == 100 and min(by_worker.values()) > 0, by_worker  # both took jobs
    expected = {source: translation(checkpoint_dir, source) for source in GERMAN}
    for job in finished:
        assert job.result["translations"] == [expected[job.params["sources"][0]]]


def test_a_worker_killed_mid_job_has_its_job_finished_by_the_other(store_url, checkpoint_dir, tmp_path):
    store = JobStore(store_url)
    sources = [GERMAN[n % len(GERMAN)] + f" {n}" for n in range(600)]
    with workers(2, store_url, checkpoint_dir, tmp_path) as running:
        job = corpus_job(store, sources)
        started = wait_for(lambda: (found := store.get(job.id)).done > 0 and found)
        killed = started.worker
        running[killed].send_signal(signal.SIGKILL)  # dies mid-job: no clean stop, its lease left to run out
        running[killed].wait(timeout=30)
        finished = wait_for(lambda: (found := store.get(job.id)).finished and found)
    assert 0 < started.done < len(sources), started.done  # it was killed mid-way
    survivor = next(name for name in running if name != killed)
    assert (finished.status, finished.worker, finished.attempts) == ("done", survivor, 2)
    translations = finished.result["translations"]
    assert len(translations) == len(sources)
    for n in (0, 1, 299, 599):
        assert translations[n] == translation(checkpoint_dir, sources[n])
