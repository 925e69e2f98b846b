"""What the shared job store costs, side by side in one run: the queue's own time per job (create, claim, renew,
finish: what a worker pays beside the job's work) on an SQLite file and, given a URL, on PostgreSQL, with 1 and 4
claiming threads; and a `memlens worker` process's start (until it claims) and its memory.

    python benchmarks/job_queue.py [--postgres postgresql+psycopg://user@host:port/db] [--jobs 400]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from app.services.store import JobStore


def queue_ms_per_job(url: str, jobs: int, threads: int) -> float:
    """Wall ms per job of `jobs` trivial jobs created, then claimed, renewed once and finished by `threads`
    workers at once."""
    store = JobStore(url)
    for n in range(jobs):
        store.create("sweep", {"n": n, "run": time.time()}, total=1)
    start = time.perf_counter()

    def drain(worker: str) -> None:
        while (job := store.claim(worker)) is not None:
            store.renew(job.id, worker, done=1)
            store.finish(job.id, worker, status="done", result={"n": job.params["n"]})

    workers = [threading.Thread(target=drain, args=(f"w{t}",)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed / jobs * 1e3


def worker_start(url: str) -> tuple[float, float]:
    """(seconds until a fresh `memlens worker` has claimed a queued job, its resident MB then)."""
    store = JobStore(url)
    job = store.create("sweep", {"model": "no such model", "reference": "demo", "sizes": [0]}, total=1)
    environment = {**os.environ, "MEMLENS_DATABASE_URL": url, "MEMLENS_WARM_UP": "false"}
    start = time.perf_counter()
    worker = subprocess.Popen(
        [sys.executable, "-m", "memlens_cli.main", "worker"], env=environment, stdout=subprocess.DEVNULL
    )
    try:
        while store.get(job.id).status == "queued":
            time.sleep(0.01)
        seconds = time.perf_counter() - start
        status = Path(f"/proc/{worker.pid}/status").read_text()
        rss_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))
    finally:
        worker.terminate()
        worker.wait()
        store.close()
    return seconds, rss_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", help="a PostgreSQL database URL (an empty database)")
    parser.add_argument("--jobs", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        stores = {"SQLite": f"sqlite:///{folder}/jobs.sqlite3"}
        if args.postgres:
            stores["PostgreSQL"] = args.postgres
        print(f"{'store':12} {'1 worker ms/job':>16} {'4 workers ms/job':>17} {'ratio':>6}")
        for name, url in stores.items():
            one, four = queue_ms_per_job(url, args.jobs, 1), queue_ms_per_job(url, args.jobs, 4)
            print(f"{name:12} {one:16.2f} {four:17.2f} {four / one:6.2f}", flush=True)
        for name, url in stores.items():
            seconds, mb = worker_start(url)
            print(f"memlens worker on {name}: claims its first job {seconds:.1f} s after it starts, {mb:.0f} MB")


if __name__ == "__main__":
    main()
