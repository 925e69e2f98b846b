"""The server stops soon after it is told to, even with requests queued for
the model: `memlens serve` gives running requests SHUTDOWN_SECONDS, and the
requests still waiting for the model then give up instead of running for
clients that will never read the answer."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import uvicorn

from app.main import create_app
from memlens_cli.main import SHUTDOWN_SECONDS

QUEUED = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_stopping_server_exits_while_requests_wait_for_the_model_and_runs_none_of_them(settings, tmp_path):
    app = create_app(settings.model_copy(update={"database": tmp_path / "jobs.sqlite3"}))
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_SECONDS
        )
    )
    serving = threading.Thread(target=server.run)
    serving.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and serving.is_alive(), "the server did not start"
        time.sleep(0.05)
    answers = []

    def translate(i: int) -> None:
        try:
            answers.append(
                httpx.post(
                    f"http://127.0.0.1:{port}/api/translate",
                    timeout=120,
                    json={"model": "tiny_memtransformer", "text": f"ein Hund spielt {i}"},
                ).status_code
            )
        except httpx.HTTPError:
            answers.append("no answer")

    gateway = app.state.gateway
    with gateway.lock:  # a long run holds the model
        clients = [threading.Thread(target=translate, args=(i,)) for i in range(QUEUED)]
        for client in clients:
            client.start()
        time.sleep(1.0)  # they are all waiting for the model now
        server.should_exit = True  # what SIGTERM does
        serving.join(timeout=SHUTDOWN_SECONDS + 20)
        stopped_while_busy = not serving.is_alive()
    for client in clients:
        client.join(timeout=30)
    assert stopped_while_busy, "the server waited for requests queued behind a busy model"
    assert gateway.recent_bytes == 0, "a queued request ran the model after its client was gone"
    assert 200 not in answers
