"""Every answer carries the server's time in a Server-Timing header: at least the time the app spent (a route
that sleeps 60 ms says 60 ms or more), on pages, the API and refusals alike."""

from __future__ import annotations

import re
import time

from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.middleware.server_timing import ServerTiming

TIMING = re.compile(r"^app;dur=(\d+\.\d\d)$")


def duration_ms(response) -> float:
    found = TIMING.match(response.headers["server-timing"])
    assert found, response.headers["server-timing"]
    return float(found.group(1))


def test_the_header_counts_the_time_the_app_spent():
    app = FastAPI()

    @app.get("/slow")
    def slow():
        time.sleep(0.06)
        return {}

    @app.get("/fast")
    def fast():
        return {}

    app.add_middleware(ServerTiming)
    with TestClient(app) as client:
        assert 60 <= duration_ms(client.get("/slow")) < 5_000
        assert duration_ms(client.get("/fast")) < 60


def test_every_kind_of_answer_of_the_app_carries_it(client):
    assert duration_ms(client.get("/healthz")) > 0
    assert duration_ms(client.get("/explore", params={"model": "tiny_memtransformer"})) > 0
    refused = client.post("/api/translate", json={"model": "tiny_memtransformer", "text": ""})
    assert refused.status_code == 400 and duration_ms(refused) > 0
    missing = client.get("/nowhere")
    assert missing.status_code == 404 and duration_ms(missing) > 0
