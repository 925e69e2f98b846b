"""A job worker: claims jobs from the shared store (app/services/store.py) one at a time and runs them, renewing
its lease while a job runs. It runs on a thread of a single server (the default: `memlens serve` needs nothing
else started) or as its own process, `memlens worker`, any number of them, on any machine that reaches the store.

A job is safe to run again: its result depends on its params only, and a run that loses its lease stops
without writing. A worker that stops cleanly gives its job back to the queue after the current batch."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from app.schemas.validation import InputError
from app.services.store import Job, JobLost, JobStore

LOG = logging.getLogger(__name__)
Progress = Callable[[int], None]  # the items of the job done so far -> None; raises to stop the job
Work = Callable[[Job, Progress], dict]  # a job and its progress callback -> the job's result
FAILED_ON_SERVER = "the job failed on the server ({}); its log has the details"


class JobInterrupted(Exception):
    """The worker is stopping: the job goes back to the queue."""


def worker_name() -> str:
    """host:pid:random, unique among the store's workers (a restarted process on the same pid included)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class JobWorker:
    def __init__(self, store: JobStore, work: Callable[[str], Work], poll_seconds: float = 1.0):
        """`work` gives the function that runs a job of a kind; the queue is polled every `poll_seconds` while it
        is empty (`wake` cuts the wait short when this process has just queued a job)."""
        self.store = store
        self.work = work
        self.name = worker_name()
        self.poll_seconds = poll_seconds
        self.stopping = threading.Event()
        self.current: Job | None = None  # the job this worker runs now
        self._wake = threading.Event()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Stop after the current batch; the interrupted job goes back to the queue."""
        self.stopping.set()
        self._wake.set()

    def give_back(self) -> None:
        """Put the running job back in the queue now, without waiting for its batch to end (a server that stops
        within seconds): the run finds it lost at its next progress and writes nothing. Call after stop()."""
        job = self.current
        if job is not None:
            try:
                self.store.release(job.id, self.name)
            except (JobLost, SQLAlchemyError):  # it ended meanwhile, or the store is away: the lease runs out
                pass

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="memlens-job-worker", daemon=True)
        thread.start()
        return thread

    def run(self) -> None:
        """Claim and run jobs until stopped. An unreachable store (a database restarting) is waited out: nothing a
        worker writes is lost by it (a claim not made is made later; a job whose outcome could not be written
        runs again once its lease runs out)."""
        while not self.stopping.is_set():
            try:
                self.store.requeue_expired()
                job = self.store.claim(self.name)
                if job is not None:
                    self.current = job
                    self.run_job(job)
                    continue
            except SQLAlchemyError as error:
                LOG.warning("the job store is unreachable (%s); trying again in %s s", error, self.poll_seconds)
            finally:
                self.current = None
            self._wake.wait(self.poll_seconds)
            self._wake.clear()

    def run_job(self, job: Job) -> None:
        """Run one claimed job to its end (done or failed), or give it back (stopping) or drop it (lost)."""
        lost = threading.Event()
        renewing = threading.Event()
        renewer = threading.Thread(target=self._renew, args=(job.id, renewing, lost), daemon=True)
        renewer.start()

        def progress(done: int) -> None:
            if lost.is_set():
                raise JobLost(job.id)
            try:
                self.store.renew(job.id, self.name, done=done)
            except SQLAlchemyError as error:  # the lease thread keeps trying; the count is written next time
                LOG.warning("job %s: its progress could not be written (%s)", job.id, error)
            if self.stopping.is_set():
                raise JobInterrupted()

        try:
            result = self.work(job.kind)(job, progress)
            outcome: dict = {"status": "done", "done": job.total, "result": result}
        except JobInterrupted:
            outcome = {}
        except JobLost:
            LOG.warning("job %s: its lease ran out and another worker took it; this run stops", job.id)
            return
        except InputError as error:
            outcome = {"status": "failed", "error": str(error)}
        except Exception as error:  # reported on the job's page without the server's details, which go to its log
            LOG.exception("job %s failed", job.id)
            outcome = {"status": "failed", "error": FAILED_ON_SERVER.format(type(error).__name__)}
        finally:
            renewing.set()
            renewer.join()
        try:
            if outcome:
                self.store.finish(job.id, self.name, **outcome)
            else:
                self.store.release(job.id, self.name)
        except JobLost:
            LOG.warning("job %s is no longer this worker's (given back, or taken after its lease ran out)", job.id)

    def _renew(self, job_id: str, done: threading.Event, lost: threading.Event) -> None:
        """Renew the lease every third of its length until the job ends, even through a long batch."""
        while not done.wait(self.store.lease_seconds / 3):
            try:
                self.store.renew(job_id, self.name)
            except JobLost:
                lost.set()
                return
            except SQLAlchemyError as error:  # tried again in a third of the lease; the job stops if it runs out
                LOG.warning("job %s: its lease could not be renewed (%s)", job_id, error)
