"""Jobs across a restart: queued jobs run when the server starts again; a job whose server died while running it
goes back to the queue when its lease runs out and is run again."""

from __future__ import annotations

import time

from app.services.gateway import ModelGateway, RunLimits
from app.services.gating import page_model
from app.services.jobs import JobRunner
from app.services.pages import SWEEP
from app.services.store import JobStore
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


def test_queued_jobs_run_after_a_restart_and_a_job_whose_server_died_runs_again(checkpoint_dir, tmp_path):
    database = tmp_path / "jobs.sqlite3"
    before = JobStore(database, lease_seconds=0.5)  # the server before it died: one job queued, one running
    queued = before.create("sweep", {"model": MODEL, "reference": "demo", "sizes": [0, 3]}, total=2)
    running = before.create("sweep", {"model": MODEL, "reference": "demo", "sizes": [3]}, total=1)
    assert before.claim("died").id == queued.id and before.claim("died").id == running.id
    before.release(queued.id, "died")  # it stopped cleanly during the first; the second's lease runs out

    store = JobStore(database, lease_seconds=0.5)  # the server starts again
    gateway = ModelGateway(CheckpointRegistry(checkpoint_dir, "cpu"), RunLimits(300, 40, 12))
    jobs = JobRunner(store, gateway, tmp_path / "no-data")
    try:
        done = wait_until_finished(store, queued.id)
        assert done.status == "done" and done.result["memory_size"] == [0, 3] and len(done.result["bleu"]) == 2
        rerun = wait_until_finished(store, running.id)
        assert (rerun.status, rerun.attempts, rerun.worker) == ("done", 2, jobs.worker.name)
        assert rerun.result["bleu"][0] == done.result["bleu"][1]  # size 3 on the demo set, by either job
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
    stopped = store.get(job.id)
    assert (stopped.status, stopped.done, stopped.attempts) == ("queued", 0, 0)
    assert [j.id for j in store.recent() if j.status == "queued"] == [job.id]
