"""Jobs across a restart: queued jobs run when the server starts again; a
job that was running when the server died is failed with that reason."""

from __future__ import annotations

import time

from app.services.gateway import ModelGateway, RunLimits
from app.services.gating import page_model
from app.services.jobs import JobRunner
from app.services.pages import SWEEP
from app.services.store import DIED_DURING_JOB, JobStore
from inference.core.checkpoint import CheckpointRegistry

MODEL = "tiny_memtransformer"


def wait_until_finished(store: JobStore, job_id: str, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = store.get(job_id)
        if job.finished:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {store.get(job_id)}")


def test_queued_jobs_run_after_a_restart_and_a_running_one_is_failed(checkpoint_dir, tmp_path):
    database = tmp_path / "jobs.sqlite3"
    before = JobStore(database)  # the server before it died: one job queued, one running
    queued = before.create("sweep", {"model": MODEL, "reference": "demo", "sizes": [0, 3]}, total=2)
    running = before.create("sweep", {"model": MODEL, "reference": "demo", "sizes": [3]}, total=1)
    before.update(running.id, status="running")

    store = JobStore(database)  # the server starts again
    gateway = ModelGateway(CheckpointRegistry(checkpoint_dir, "cpu"), RunLimits(300, 40, 12))
    jobs = JobRunner(store, gateway, tmp_path / "no-data")
    try:
        assert store.get(running.id).status == "failed" and store.get(running.id).error == DIED_DURING_JOB
        done = wait_until_finished(store, queued.id)
        assert done.status == "done" and done.result["memory_size"] == [0, 3] and len(done.result["bleu"]) == 2
    finally:
        jobs.shutdown()


def test_a_clean_stop_puts_the_running_job_back_in_the_queue(checkpoint_dir, tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite3")
    gateway = ModelGateway(CheckpointRegistry(checkpoint_dir, "cpu"), RunLimits(300, 40, 12))
    jobs = JobRunner(store, gateway, tmp_path / "no-data")
    with gateway.lock:  # hold the model so the job is mid-way when the server stops
        job = jobs.submit_sweep(page_model(gateway, SWEEP, MODEL), "demo")
        deadline = time.monotonic() + 60
        while store.get(job.id).status != "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        jobs.shutdown()
    deadline = time.monotonic() + 60
    while store.get(job.id).status == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.get(job.id).status == "queued" and store.get(job.id).done == 0
    assert [j.id for j in store.queued()] == [job.id]
