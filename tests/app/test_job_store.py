"""The shared job store on SQLite and on a real PostgreSQL: a job is claimed by exactly one worker, a lease that
runs out puts the job back in the queue, and a worker that lost its job cannot write to it."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from sqlalchemy.exc import OperationalError

from app.services.store import DIED_DURING_JOB, MAX_ATTEMPTS, JobLost, JobStore
from app.services.worker import JobWorker

JOBS = 100


def test_concurrent_claims_take_every_job_exactly_once(store_url):
    store = JobStore(store_url)
    created = [store.create("sweep", {"n": n}, total=1).id for n in range(JOBS)]
    claimed: dict[str, list[str]] = {f"worker-{w}": [] for w in range(4)}
    start, first_claims = threading.Barrier(len(claimed)), threading.Barrier(len(claimed), timeout=60)

    def claim_all(worker: str) -> None:
        start.wait()  # the four race for the first jobs
        while (job := store.claim(worker)) is not None:
            if not claimed[worker]:
                first_claims.wait()  # and each holds its first job while the others claim theirs
            claimed[worker].append(job.id)
            store.finish(job.id, worker, status="done", result={"by": worker})

    threads = [threading.Thread(target=claim_all, args=(worker,)) for worker in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    every_claim = [job_id for ids in claimed.values() for job_id in ids]
    assert sorted(every_claim) == sorted(created)  # each job once: none twice, none missed
    assert all(claimed.values())  # the claims interleaved: four jobs running at once, one per worker
    for worker, ids in claimed.items():
        for job_id in ids:
            job = store.get(job_id)
            assert (job.status, job.worker, job.attempts, job.result) == ("done", worker, 1, {"by": worker})


def test_claims_take_the_oldest_queued_job_first(store_url):
    store = JobStore(store_url)
    first, second = store.create("sweep", {"n": 1}, total=1), store.create("sweep", {"n": 2}, total=1)
    assert store.claim("a").id == first.id
    assert store.claim("b").id == second.id
    assert store.claim("c") is None


def test_a_job_whose_lease_runs_out_goes_back_to_the_queue_and_its_old_worker_cannot_write(store_url):
    store = JobStore(store_url, lease_seconds=0.3)
    job = store.create("sweep", {"n": 1}, total=4)
    assert store.claim("dies").id == job.id
    store.renew(job.id, "dies", done=2)
    assert store.requeue_expired() == 0  # renewed just now
    time.sleep(0.5)
    assert store.requeue_expired() == 1
    requeued = store.get(job.id)
    assert (requeued.status, requeued.done, requeued.attempts) == ("queued", 0, 1)
    assert store.claim("takes over").id == job.id
    with pytest.raises(JobLost):
        store.renew(job.id, "dies", done=3)
    with pytest.raises(JobLost):
        store.finish(job.id, "dies", status="done", result={"by": "dies"})
    store.finish(job.id, "takes over", status="done", done=4, result={"by": "takes over"})
    finished = store.get(job.id)
    assert (finished.status, finished.worker, finished.attempts, finished.result) == (
        "done",
        "takes over",
        2,
        {"by": "takes over"},
    )


def test_a_job_takes_the_time_from_its_last_claim_to_its_end(store_url):
    store = JobStore(store_url, lease_seconds=0.05)
    job = store.create("sweep", {"n": 1}, total=1)
    assert (job.started_at, job.ended_at, job.seconds) == (None, None, None)
    store.claim("dies")
    time.sleep(0.3)
    store.requeue_expired()
    before_claim = time.time()
    store.claim("takes over")
    running = store.get(job.id)
    assert running.started_at >= before_claim and running.seconds is None
    time.sleep(0.2)
    store.finish(job.id, "takes over", status="done", result={})
    done = store.get(job.id)
    assert 0.2 <= done.seconds < 0.3 + 0.2  # from the second claim: not the first worker's 0.3 s
    assert done.ended_at - done.started_at == done.seconds and done.ended_at <= time.time()


def test_a_job_whose_workers_keep_dying_is_failed_after_the_last_attempt(store_url):
    store = JobStore(store_url, lease_seconds=0.05)
    job = store.create("sweep", {"n": 1}, total=1)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert store.claim(f"dies {attempt}").id == job.id
        time.sleep(0.1)
        store.requeue_expired()
    failed = store.get(job.id)
    assert (failed.status, failed.error, failed.attempts) == ("failed", DIED_DURING_JOB, MAX_ATTEMPTS)
    assert store.claim("next") is None


def test_a_released_job_is_queued_again_and_its_start_not_counted(store_url):
    store = JobStore(store_url)
    job = store.create("sweep", {"n": 1}, total=2)
    store.claim("stops")
    store.renew(job.id, "stops", done=1)
    store.release(job.id, "stops")
    released = store.get(job.id)
    assert (released.status, released.done, released.attempts) == ("queued", 0, 0)


def test_a_store_written_before_shared_queues_opens_with_its_jobs(tmp_path):
    """runs/memlens.sqlite3 of an earlier version: the table without worker, lease, attempts, start and end."""
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as old:
        old.execute(
            "CREATE TABLE jobs (id TEXT PRIMARY KEY, kind TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL, "
            "done INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT, "
            "created REAL NOT NULL)"
        )
        old.execute(
            "INSERT INTO jobs VALUES ('a1', 'sweep', ?, 'done', 2, 2, ?, NULL, 1.0)",
            ('{"model": "m"}', '{"bleu": [1.5]}'),
        )
        old.execute("INSERT INTO jobs VALUES ('b2', 'sweep', '{}', 'queued', 0, 1, NULL, NULL, 2.0)")
        old.execute("INSERT INTO jobs VALUES ('c3', 'sweep', '{}', 'running', 1, 2, NULL, NULL, 3.0)")
    store = JobStore(path)
    assert store.requeue_expired() == 1  # c3 was running when the old server died: it has no lease to wait out
    done = store.get("a1")
    assert (done.status, done.result, done.params, done.attempts, done.worker) == (
        "done",
        {"bleu": [1.5]},
        {"model": "m"},
        0,
        None,
    )
    assert done.seconds is None  # an earlier version did not keep a job's start and end
    assert store.claim("w").id == "b2" and store.claim("w").id == "c3"


def test_processes_opening_a_new_store_at_once_all_open_it(store_url):
    """`memlens serve --workers N` starts N web processes and a job worker on a database none has opened yet."""
    errors: list[Exception] = []
    start = threading.Barrier(6)

    def open_store() -> None:
        start.wait()
        try:
            JobStore(store_url).close()
        except Exception as error:  # reported below, with the others
            errors.append(error)

    openers = [threading.Thread(target=open_store) for _ in range(6)]
    for opener in openers:
        opener.start()
    for opener in openers:
        opener.join(timeout=60)
    assert errors == []
    assert JobStore(store_url).claim("w") is None  # one usable table


class StoreThatLosesOneWrite(JobStore):
    """A store whose first outcome write fails as a database restarting would make it fail."""

    failed = False

    def finish(self, job_id: str, worker: str, **fields) -> None:
        if not self.failed:
            self.failed = True
            raise OperationalError("UPDATE jobs ...", {}, ConnectionError("the database is restarting"))
        super().finish(job_id, worker, **fields)


def test_a_worker_outlives_a_store_that_fails_and_the_unwritten_job_runs_again(store_url):
    store = StoreThatLosesOneWrite(store_url, lease_seconds=0.5)
    first, second = store.create("sweep", {"n": 1}, total=1), store.create("sweep", {"n": 2}, total=1)
    worker = JobWorker(store, lambda kind: lambda job, progress: {"twice": 2 * job.params["n"]}, poll_seconds=0.1)
    thread = worker.start()
    try:
        deadline = time.monotonic() + 30
        while not all(store.get(job.id).finished for job in (first, second)):
            assert time.monotonic() < deadline, [store.get(job.id) for job in (first, second)]
            time.sleep(0.05)
    finally:
        worker.stop()
        thread.join(timeout=30)
    rerun, done = store.get(first.id), store.get(second.id)
    assert (rerun.status, rerun.result, rerun.attempts) == ("done", {"twice": 2}, 2)  # its lease ran out: run again
    assert (done.status, done.result, done.attempts) == ("done", {"twice": 4}, 1)
