"""A real PostgreSQL server for the tests, from the system's packages (Debian's `postgresql`), started on loopback
in a folder of its own and stopped afterwards. PostgreSQL refuses to run as root: when the tests do, the server
runs as the `postgres` user the package creates."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

USER = "memlens"


def server_programs() -> Path:
    """The folder of initdb and pg_ctl: Debian keeps them under /usr/lib/postgresql/<version>/bin."""
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3]))
    if versions:
        return versions[-1].parent
    found = shutil.which("pg_ctl")
    if found is None:
        raise RuntimeError(
            "PostgreSQL's server programs are not installed: apt-get install postgresql (the README's test command)"
        )
    return Path(found).resolve().parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def postgres_server() -> Iterator[str]:
    """A running server; yields the psycopg connection string of its `postgres` database as USER."""
    programs = server_programs()
    folder = Path(tempfile.mkdtemp(prefix="memlens-postgres-"))  # under /tmp: the postgres user can reach it
    as_owner: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        as_owner = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    data = folder / "data"
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
    try:
        subprocess.run(
            [*as_owner, programs / "initdb", "-D", data, "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [*as_owner, programs / "pg_ctl", "-D", data, "-l", folder / "log", "-o", options, "-w", "start"],
            check=True,
            capture_output=True,
        )
        try:
            yield f"host=127.0.0.1 port={port} user={USER} dbname=postgres"
        finally:
            subprocess.run(
                [*as_owner, programs / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"], capture_output=True
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(server: str) -> str:
    """A new, empty database on the server; its SQLAlchemy URL."""
    name = f"memlens_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    fields = dict(part.split("=", 1) for part in server.split())
    return f"postgresql+psycopg://{fields['user']}@{fields['host']}:{fields['port']}/{name}"
