"""`memlens serve --workers 2`: two web processes that only queue jobs, and the `memlens worker` process started
beside them that runs them, all on one store (SQLite, and PostgreSQL); a job worker that dies is started again
and runs the next job; SIGTERM stops them all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from app.services.store import JobStore
from tests.app.test_serve_shutdown import free_port


def children(pid: int) -> list[int]:
    """The processes `pid` started, and theirs."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += [int(child), *children(int(child))]
    return found


def command_line(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")


def wait_for_job(url: str, job_id: str) -> dict:
    deadline = time.monotonic() + 120
    while (job := httpx.get(f"{url}/api/jobs/{job_id}", timeout=30).json())["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job["status"] == "done" and len(job["result"]["bleu"]) == len(job["result"]["memory_size"]) > 1, job
    return job


def job_workers(server: int) -> list[int]:
    return [pid for pid in children(server) if command_line(pid)[-1] == "worker"]


def queue_sweep(url: str, model: str = "tiny_memtransformer") -> str:
    """A lesion sweep's job id (the same sweep asked again is the same job)."""
    answer = httpx.post(f"{url}/api/sweeps", json={"model": model, "reference": "demo"}, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()["id"]


def test_serve_with_two_web_workers_queues_jobs_for_the_job_worker(checkpoint_dir, store_url, tmp_path):
    port = free_port()
    environment = {**os.environ, "MEMLENS_DATABASE_URL": store_url, "MEMLENS_DATA_DIR": str(tmp_path / "no-data")}
    command = [sys.executable, "-m", "memlens_cli.main", "--checkpoints", str(checkpoint_dir), "serve"]
    server = subprocess.Popen([*command, "--port", str(port), "--workers", "2"], env=environment)
    url = f"http://127.0.0.1:{port}"
    store = JobStore(store_url)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
            try:
                if httpx.get(f"{url}/healthz", timeout=5).json()["status"] == "ok":
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        processes = children(server.pid)
        first_worker = job_workers(server.pid)
        assert len(first_worker) == 1, [command_line(pid) for pid in processes]
        web_workers = [pid for pid in processes if "spawn_main" in " ".join(command_line(pid))]
        assert len(web_workers) == 2, [command_line(pid) for pid in processes]  # uvicorn's spawned web workers

        for job_id in [queue_sweep(url) for _ in range(2)]:  # one through each web worker, likely
            wait_for_job(url, job_id)
            assert int(store.get(job_id).worker.split(":")[1]) == first_worker[0]  # host:pid:random; not a web worker

        os.kill(first_worker[0], signal.SIGKILL)  # the job worker dies: serve starts another
        deadline = time.monotonic() + 60
        while not (second_worker := [pid for pid in job_workers(server.pid) if pid != first_worker[0]]):
            assert time.monotonic() < deadline, "no job worker was started again"
            time.sleep(0.2)
        later = queue_sweep(url, "tiny_membottleneck")
        wait_for_job(url, later)
        assert int(store.get(later).worker.split(":")[1]) == second_worker[0]
        processes = children(server.pid)
    finally:
        store.close()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    deadline = time.monotonic() + 30
    while left := [pid for pid in processes if Path(f"/proc/{pid}").exists()]:
        assert time.monotonic() < deadline, f"still running after the server stopped: {left}"
        time.sleep(0.1)
