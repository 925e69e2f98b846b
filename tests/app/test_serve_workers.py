"""`memlens serve --workers 2`: two web processes that only queue jobs, and the `memlens worker` process started
beside them that runs them, all on one store; SIGTERM stops them all."""

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


def test_serve_with_two_web_workers_queues_jobs_for_the_job_worker(checkpoint_dir, tmp_path):
    database = tmp_path / "jobs.sqlite3"
    port = free_port()
    environment = {**os.environ, "MEMLENS_DATABASE": str(database), "MEMLENS_DATA_DIR": str(tmp_path / "no-data")}
    command = [sys.executable, "-m", "memlens_cli.main", "--checkpoints", str(checkpoint_dir), "serve"]
    server = subprocess.Popen([*command, "--port", str(port), "--workers", "2"], env=environment)
    url = f"http://127.0.0.1:{port}"
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
        job_workers = [pid for pid in processes if command_line(pid)[-1] == "worker"]
        assert len(job_workers) == 1, [command_line(pid) for pid in processes]
        web_workers = [pid for pid in processes if "spawn_main" in " ".join(command_line(pid))]
        assert len(web_workers) == 2, [command_line(pid) for pid in processes]  # uvicorn's spawned web workers

        answers = [
            httpx.post(f"{url}/api/sweeps", json={"model": "tiny_memtransformer", "reference": "demo"}, timeout=60)
            for _ in range(2)
        ]
        assert [answer.status_code for answer in answers] == [200, 200], [answer.text for answer in answers]
        job_id = answers[0].json()["id"]
        deadline = time.monotonic() + 120
        while (job := httpx.get(f"{url}/api/jobs/{job_id}", timeout=30).json())["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline, job
            time.sleep(0.2)
        assert job["status"] == "done" and len(job["result"]["bleu"]) == len(job["result"]["memory_size"]) > 1
        ran_on = JobStore(database).get(job_id).worker  # host:pid:random
        assert int(ran_on.split(":")[1]) == job_workers[0]  # the job worker ran it, not a web process
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    deadline = time.monotonic() + 30
    while left := [pid for pid in processes if Path(f"/proc/{pid}").exists()]:
        assert time.monotonic() < deadline, f"still running after the server stopped: {left}"
        time.sleep(0.1)
