"""Property-based test of the JSON API: schemathesis generates requests from
the app's own OpenAPI schema (valid and invalid) and sends them to the app
on the shipped checkpoints; no request may get a server error or a response
that its documented schema does not allow."""

from __future__ import annotations

import shutil
import tempfile
import time
import zlib
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import dictionaries  # noqa: F401
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.main import create_app
from app.services.jobs import JobRunner
from app.services.store import JobStore
from app.settings import Settings
from inference.core.places import REPO_ROOT

# `dictionaries` is imported here, at the top of the stack, because schemathesis imports it lazily deep inside
# Hypothesis's generation, where pytest's rewriting of that plugin module parses it and CPython 3.11 can fail with
# "SystemError: AST constructor recursion depth mismatch" (a fresh clone's collection, now and then).
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# One shipped model of each kind the API serves: the names in the schema's examples.
SHIPPED = ["transformer", "memtransformer_10", "working_memory_de_en", "language_model"]
EXAMPLES_PER_OPERATION = 10
ATTRIBUTION_EXAMPLES = 3  # integrated gradients: 32 forward and backward passes per example
JOB_WAIT_SECONDS = 120  # for the background jobs the examples started to finish
CALL_TIMEOUT_SECONDS = 120  # a first call loads its model; an attribution integrates gradients on a CPU

# The app on the shipped checkpoints, with short texts and translations so that every example stays quick, and
# an empty data directory: a sweep or mining job the examples start reads the demo set or an upload, never the
# 1,000-sentence Multi30k test set (minutes of work per job on 2 cores, past the jobs' wait below).
DATABASE_DIR = Path(tempfile.mkdtemp(prefix="memlens-api-properties-"))
APP = create_app(
    Settings(
        checkpoint_dir=REPO_ROOT / "checkpoints",
        data_dir=DATABASE_DIR / "no-corpora",
        device="cpu",
        max_text_chars=200,
        max_source_tokens=24,
        max_new_tokens=12,
        max_upload_lines=4,
        max_upload_bytes=4000,
        database=DATABASE_DIR / "memlens.sqlite3",
    )
)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module", autouse=True)
def started_app():
    """The app's start-up (models, jobs) for the calls schemathesis makes; its shutdown after them."""
    with TestClient(APP):
        yield
    shutil.rmtree(DATABASE_DIR, ignore_errors=True)


def real_model(generated: str) -> str:
    """Most generated model names become a shipped model, picked from the generated one, so
    that the models really run; one in four stays as generated (mostly unknown: a 404)."""
    digest = zlib.crc32(generated.encode("utf-8", "surrogatepass"))
    return generated if digest % 4 == 0 else SHIPPED[digest % len(SHIPPED)]


def with_real_models(case) -> None:
    body = case.body
    if isinstance(body, dict):
        if isinstance(body.get("model"), str):
            body["model"] = real_model(body["model"])
        if isinstance(body.get("models"), list):
            body["models"] = [real_model(m) if isinstance(m, str) else m for m in body["models"]]
    if case.path_parameters and isinstance(case.path_parameters.get("model"), str):
        case.path_parameters["model"] = real_model(case.path_parameters["model"])


@schema.exclude(path="/api/attribution").parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_and_no_schema_violation(case):
    with_real_models(case)
    case.call_and_validate(checks=CHECKS, timeout=CALL_TIMEOUT_SECONDS)


@schema.include(path="/api/attribution").parametrize()
@settings(max_examples=ATTRIBUTION_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_attribution_has_no_server_error_and_no_schema_violation(case):
    with_real_models(case)
    case.call_and_validate(checks=CHECKS, timeout=CALL_TIMEOUT_SECONDS)


def test_no_job_the_examples_started_failed_on_the_server():
    """Uploads and sweeps run in the background: their failures are no response, so they are checked here.
    Schemathesis runs the app's lifespan of its own, beside this module's, and ends it with its test: a job its
    server still held queued waits in the store, as after any server's stop. A runner over the same store runs
    it, as the next server's start would."""
    store = APP.state.jobs.store
    restarted = JobRunner(JobStore(DATABASE_DIR / "memlens.sqlite3"), APP.state.gateway, APP.state.settings.data_dir)
    try:
        deadline = time.monotonic() + JOB_WAIT_SECONDS
        while time.monotonic() < deadline and not all(job.finished for job in store.recent(limit=10_000)):
            time.sleep(0.5)
    finally:
        restarted.shutdown()
    jobs = [(job.kind, job.status, job.params.get("model"), job.params.get("reference"))
            for job in store.recent(limit=10_000)]  # fmt: skip
    unfinished = [(kind, status) for kind, status, _, _ in jobs if status not in ("done", "failed")]
    assert unfinished == [], f"jobs still unfinished after {JOB_WAIT_SECONDS} s, so not checked; all jobs: {jobs}"
    failed = [
        (job.kind, job.params.get("model"), job.error) for job in store.recent(limit=10_000) if job.status == "failed"
    ]
    assert [f for f in failed if f[2].startswith("the job failed on the server")] == []
