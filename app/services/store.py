"""Jobs, their uploads (a corpus job's lines are its params) and their results in one shared store, so that a
reload or a restart loses nothing, every result has a permalink (/results/{id}), and any number of web workers
and job workers (`memlens worker`, on any machine that reaches the store) share one queue.

The store is a database behind SQLAlchemy: an SQLite file by default (WAL, so readers never wait for the
writer; a busy timeout, so writers wait for each other rather than fail), PostgreSQL through a database URL
(`MEMLENS_DATABASE_URL=postgresql+psycopg://user@host/db`).

A job is claimed by exactly one worker: one UPDATE of the oldest queued job, chosen in a subquery that skips
rows another worker has locked (FOR UPDATE SKIP LOCKED on PostgreSQL) or run under SQLite's one writer
(BEGIN IMMEDIATE), with `status = 'queued'` checked again on the row it updates. The claim carries a lease: the
worker renews it while the job runs, and a job whose lease has run out (its worker died) goes back to the queue,
to be run again from the start. Every write a worker makes to its job names the worker, so a worker that lost its
job (its lease ran out while it stalled) cannot overwrite the run that replaced it: it learns it lost the job
(JobLost) and stops."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import (
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    inspect,
    make_url,
    or_,
    select,
    text,
    update,
)

METADATA = MetaData()
JOBS = Table(
    "jobs",
    METADATA,
    Column("id", String(32), primary_key=True),
    Column("kind", String(32), nullable=False),  # "corpus", "sweep" or "mining" (app/services/jobs.py)
    Column("params", Text, nullable=False),  # JSON; identical params reuse a finished job
    Column("status", String(16), nullable=False),  # queued, running, done, failed
    Column("done", Integer, nullable=False, default=0),
    Column("total", Integer, nullable=False, default=0),
    Column("result", Text),  # JSON when done
    Column("error", Text),
    Column("created", Float, nullable=False),
    Column("worker", String(64)),  # the worker that holds (or last held) the job
    Column("lease_until", Float),  # while running: when the job goes back to the queue unless renewed
    Column("attempts", Integer, nullable=False, default=0),  # claims that started it
    Column("started_at", Float),  # when its last claim started it
    Column("ended_at", Float),  # when it ended, done or failed
)
FIELDS = [column.name for column in JOBS.columns]
ADDED_COLUMNS = {  # columns a store written before shared queues lacks, added when it is opened
    "worker": "VARCHAR(64)",
    "lease_until": "FLOAT",
    "attempts": "INTEGER NOT NULL DEFAULT 0",
    "started_at": "FLOAT",
    "ended_at": "FLOAT",
}
BUSY_SECONDS = 30  # how long an SQLite connection waits for another's lock
SCHEMA_LOCK = 0x6D656D6C656E73  # PostgreSQL advisory lock held while a process creates or updates the table
MAX_ATTEMPTS = 3  # a job whose worker died this many times (say, out of memory) is failed, not run again
DIED_DURING_JOB = (
    f"the job's worker stopped {MAX_ATTEMPTS} times while running it (the server's log may say why); submit it again"
)


class JobLost(Exception):
    """The job is no longer this worker's: its lease ran out and another worker took it (or it was removed)."""


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
    worker: str | None = None
    lease_until: float | None = None
    attempts: int = 0
    started_at: float | None = None  # time.time() when its last claim started it
    ended_at: float | None = None  # time.time() when it ended

    @property
    def seconds(self) -> float | None:
        """How long its last run took, from its claim to its end; None until it has ended."""
        return None if self.started_at is None or self.ended_at is None else self.ended_at - self.started_at

    @property
    def progress(self) -> float:
        return self.done / self.total if self.total else 0.0

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed")


def database_url(database: str | Path) -> str:
    """A SQLAlchemy URL: a path is an SQLite file."""
    return database if isinstance(database, str) else f"sqlite:///{database}"


def open_engine(url: str) -> Engine:
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    path = url.removeprefix("sqlite:///")
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def configure(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # transactions are begun below, not by the driver
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_SECONDS * 1000}")
        use_wal(cursor)
        cursor.close()

    @event.listens_for(engine, "begin")
    def begin(connection):
        # A writer takes SQLite's write lock at once: a claim reads and updates under it, and no two
        # writers deadlock upgrading read locks. A reader begins deferred and never waits.
        writes = connection.get_execution_options().get("writes", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")

    return engine


def use_wal(cursor: sqlite3.Cursor) -> None:
    """Put the file in WAL mode. Switching a new file takes its lock, and SQLite answers a second connection
    switching at that moment with "database is locked" at once, without its busy wait (processes opening one new
    database together: serve --workers); so the switch is tried again until the busy timeout."""
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class JobStore:
    def __init__(self, database: str | Path, lease_seconds: float = 30.0):
        self.url = database_url(database)
        self.lease_seconds = lease_seconds
        self._engine = open_engine(self.url)
        self._writer = self._engine.execution_options(writes=True)
        with self._writer.begin() as connection:
            if connection.dialect.name == "postgresql":  # processes opening a new database at once (serve --workers)
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK})
            METADATA.create_all(connection)
            present = {column["name"] for column in inspect(connection).get_columns("jobs")}
            for name, declaration in ADDED_COLUMNS.items():
                if name not in present:
                    connection.execute(text(f"ALTER TABLE jobs ADD COLUMN {name} {declaration}"))
            # what every claim and requeue looks up (a new table or one written before it)
            connection.execute(text("CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, created)"))

    @property
    def shown_url(self) -> str:
        """The store's URL without its password, for logs."""
        return make_url(self.url).render_as_string(hide_password=True)

    def close(self) -> None:
        self._engine.dispose()

    def create(self, kind: str, params: dict, total: int) -> Job:
        job = Job(uuid.uuid4().hex[:12], kind, params, "queued", 0, total, None, None, time.time())
        with self._writer.begin() as connection:
            connection.execute(
                JOBS.insert().values(
                    id=job.id,
                    kind=kind,
                    params=_params_json(params),
                    status="queued",
                    done=0,
                    total=total,
                    created=job.created,
                    attempts=0,
                )
            )
        return job

    def get(self, job_id: str) -> Job | None:
        return next(iter(self._select(select(JOBS).where(JOBS.c.id == job_id))), None)

    def find_done(self, kind: str, params: dict) -> Job | None:
        done = JOBS.c.kind == kind, JOBS.c.params == _params_json(params), JOBS.c.status == "done"
        return next(iter(self._select(select(JOBS).where(*done).order_by(JOBS.c.created.desc()).limit(1))), None)

    def recent(self, limit: int = 20) -> list[Job]:
        return self._select(select(JOBS).order_by(JOBS.c.created.desc()).limit(limit))

    def _select(self, query) -> list[Job]:
        with self._engine.connect() as connection:
            return [_job(row) for row in connection.execute(query)]

    # A worker's side of the queue

    def requeue_expired(self) -> int:
        """Put back in the queue every running job whose lease has run out (its worker died or stalled), or fail
        it after MAX_ATTEMPTS starts; returns how many went back."""
        # A running job without a lease was running when its store was written by a version without leases.
        expired = (JOBS.c.status == "running", or_(JOBS.c.lease_until < time.time(), JOBS.c.lease_until.is_(None)))
        with self._writer.begin() as connection:
            connection.execute(
                update(JOBS)
                .where(*expired, JOBS.c.attempts >= MAX_ATTEMPTS)
                .values(status="failed", error=DIED_DURING_JOB, lease_until=None, ended_at=time.time())
            )
            return connection.execute(
                update(JOBS).where(*expired).values(status="queued", done=0, lease_until=None)
            ).rowcount

    def claim(self, worker: str) -> Job | None:
        """The oldest queued job, now running under `worker`'s lease; None when the queue is empty."""
        now = time.time()
        oldest = (
            select(JOBS.c.id)
            .where(JOBS.c.status == "queued")
            .order_by(JOBS.c.created, JOBS.c.id)
            .limit(1)
            .with_for_update(skip_locked=True)  # PostgreSQL: pass over a row another worker is claiming
            .scalar_subquery()
        )
        claimed = (
            update(JOBS)
            .where(JOBS.c.id == oldest, JOBS.c.status == "queued")
            .values(
                status="running",
                worker=worker,
                lease_until=now + self.lease_seconds,
                attempts=JOBS.c.attempts + 1,
                started_at=now,
            )
            .returning(*JOBS.c)
        )
        with self._writer.begin() as connection:
            row = connection.execute(claimed).first()
        return _job(row) if row else None

    def renew(self, job_id: str, worker: str, **fields) -> None:
        """Extend `worker`'s lease on its job, writing `fields` (progress) with it; JobLost if the job is no
        longer the worker's."""
        self._as_holder(job_id, worker, lease_until=time.time() + self.lease_seconds, **fields)

    def finish(self, job_id: str, worker: str, **fields) -> None:
        """Write `worker`'s outcome of its job (status done or failed, result, error); JobLost as renew."""
        if "result" in fields:
            fields["result"] = json.dumps(fields["result"])
        self._as_holder(job_id, worker, lease_until=None, ended_at=time.time(), **fields)

    def release(self, job_id: str, worker: str) -> None:
        """Give a job back to the queue untouched (its worker is stopping cleanly): this start does not count."""
        self._as_holder(job_id, worker, status="queued", done=0, lease_until=None, attempts=JOBS.c.attempts - 1)

    def _as_holder(self, job_id: str, worker: str, **fields) -> None:
        held = update(JOBS).where(JOBS.c.id == job_id, JOBS.c.worker == worker, JOBS.c.status == "running")
        with self._writer.begin() as connection:
            if connection.execute(held.values(**fields)).rowcount != 1:
                raise JobLost(job_id)


def _params_json(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _job(row) -> Job:
    values = dict(zip(FIELDS, row))
    values["params"] = json.loads(values["params"])
    values["result"] = json.loads(values["result"]) if values["result"] else None
    return Job(**values)
