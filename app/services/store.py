"""Jobs and their results in SQLite, so a reload or a restart loses nothing
and every result has a permalink (/results/{id})."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,          -- "corpus" (an uploaded file) or "sweep" (BLEU against memory size)
    params TEXT NOT NULL,        -- JSON; identical params reuse a finished job
    status TEXT NOT NULL,        -- queued, running, done, failed
    done INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    result TEXT,                 -- JSON when done
    error TEXT,
    created REAL NOT NULL
)
"""


DIED_DURING_JOB = "the server stopped while this job was running; submit it again"


@dataclass
class Job:
    id: str
    kind: str
    params: dict
    status: str
    done: int
    total: int
    result: dict | None
    error: str | None
    created: float

    @property
    def progress(self) -> float:
        return self.done / self.total if self.total else 0.0

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")


class JobStore:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.execute(SCHEMA)
            # A job still running belonged to a server that died during it (a server that stops
            # cleanly puts its job back in the queue); queued jobs are run again (JobRunner).
            self._db.execute(
                "UPDATE jobs SET status = 'failed', error = ? WHERE status = 'running'", (DIED_DURING_JOB,)
            )

    def create(self, kind: str, params: dict, total: int) -> Job:
        job_id = uuid.uuid4().hex[:12]
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO jobs (id, kind, params, status, total, created) VALUES (?, ?, ?, 'queued', ?, ?)",
                (job_id, kind, json.dumps(params, sort_keys=True), total, time.time()),
            )
        job = self.get(job_id)
        assert job is not None  # just written
        return job

    def update(self, job_id: str, **fields) -> None:
        if "result" in fields:
            fields["result"] = json.dumps(fields["result"])
        columns = ", ".join(f"{name} = ?" for name in fields)
        with self._lock, self._db:
            self._db.execute(f"UPDATE jobs SET {columns} WHERE id = ?", (*fields.values(), job_id))

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _job(row) if row else None

    def find_done(self, kind: str, params: dict) -> Job | None:
        with self._lock:
            row = self._db.execute(
                "SELECT * FROM jobs WHERE kind = ? AND params = ? AND status = 'done' ORDER BY created DESC LIMIT 1",
                (kind, json.dumps(params, sort_keys=True)),
            ).fetchone()
        return _job(row) if row else None

    def queued(self) -> list[Job]:
        """Jobs waiting to run, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM jobs WHERE status = 'queued' ORDER BY created").fetchall()
        return [_job(row) for row in rows]

    def recent(self, limit: int = 20) -> list[Job]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM jobs ORDER BY created DESC LIMIT ?", (limit,)).fetchall()
        return [_job(row) for row in rows]


def _job(row) -> Job:
    job_id, kind, params, status, done, total, result, error, created = row
    return Job(
        job_id, kind, json.loads(params), status, done, total, json.loads(result) if result else None, error, created
    )
