"""Start-up: the checkpoint scan runs in the background (/healthz says "starting" until it ends, and whatever needs
the models waits for it), and the warm-up loads and runs the models each page opens on."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from inference.core.checkpoint import CheckpointRegistry

SCAN_WAIT_SECONDS = 60


@pytest.fixture
def held_scan(monkeypatch):
    """Every folder's check waits until the event is set: the scan is running for as long as the test wants."""
    release = threading.Event()
    check = CheckpointRegistry._check

    def held(folder):
        assert release.wait(SCAN_WAIT_SECONDS)
        return check(folder)

    monkeypatch.setattr(CheckpointRegistry, "_check", staticmethod(held))
    yield release
    release.set()


def test_healthz_answers_while_the_scan_runs_and_requests_for_models_wait_for_it(settings, held_scan):
    with TestClient(create_app(settings)) as client, ThreadPoolExecutor(1) as pool:
        starting = {"status": "starting", "models": None, "broken": None, "device": "cpu", "warm_up": "off"}
        assert client.get("/healthz").json() == starting
        models = pool.submit(lambda: client.get("/api/models"))
        assert not models.done()  # it waits for the scan
        held_scan.set()
        listed = [model["name"] for model in models.result(timeout=SCAN_WAIT_SECONDS).json()["models"]]
        assert "tiny_memtransformer" in listed and "neural_gpu_addition" in listed
        assert client.get("/healthz").json() == {**starting, "status": "ok", "models": 7, "broken": 2}


def test_a_scan_that_fails_says_so_to_whatever_reads_the_models(monkeypatch, checkpoint_dir):
    def failing(folder):
        raise OSError("the disk went away")

    monkeypatch.setattr(CheckpointRegistry, "_check", staticmethod(failing))
    registry = CheckpointRegistry(checkpoint_dir, "cpu", scan_in_background=True)
    with pytest.raises(RuntimeError, match="the checkpoint scan failed: OSError.*the disk went away"):
        registry.entries  # noqa: B018
    assert not registry.scanning


def test_the_warm_up_opens_every_page_that_runs_a_model_on_the_models_it_opens_on(settings, caplog):
    """In page order, by hand: working memory opens on the one working-memory model; segments has none; state and
    focus on their models named in app/data/opens_on.json (neural_gpu_addition, extended_neural_gpu_de_en, real
    copies here); explore and FF on the first model they offer by name (tiny_language_model, warmed once);
    compare, its two opens_on absent, on the first two translators it offers. Every page and opening run answered
    200 (a page that did not is logged)."""
    with TestClient(create_app(settings.model_copy(update={"warm_up": True}))) as client:
        warmed = client.app.state.warm_up.result(timeout=120)
        registry = client.app.state.gateway.registry
    expected = ["tiny_working_memory", "neural_gpu_addition", "tiny_language_model", "extended_neural_gpu_de_en"]
    assert warmed == [*expected, "tiny_membottleneck", "tiny_memtransformer"]
    assert set(registry.loaded()) == set(warmed)
    assert "while warming up" not in caplog.text


def test_healthz_says_the_warm_up_runs_until_it_has_opened_every_page(settings, held_scan):
    """The warm-up waits for the scan (held here), so it is running for as long as the scan is; then it ends."""
    with TestClient(create_app(settings.model_copy(update={"warm_up": True}))) as client:
        assert client.get("/healthz").json()["warm_up"] == "running"
        held_scan.set()
        client.app.state.warm_up.result(timeout=120)
        health = client.get("/healthz").json()
    assert (health["status"], health["warm_up"]) == ("ok", "done")


def test_no_warm_up_loads_nothing(settings):
    with TestClient(create_app(settings)) as client:
        assert client.app.state.warm_up is None
        assert client.get("/api/models").status_code == 200
        assert client.app.state.gateway.registry.loaded() == []


def test_a_server_stopping_mid_warm_up_ends_it_after_the_request_in_progress(settings):
    """The server stops while the warm-up is still at its first pages: the warm-up ends before the server does
    (an interpreter that exits while a model runs on another thread aborts in PyTorch's teardown), having
    warmed fewer models than the six a whole warm-up opens on."""
    with TestClient(create_app(settings.model_copy(update={"warm_up": True}))) as client:
        warming = client.app.state.warm_up
    assert not [thread for thread in threading.enumerate() if thread.name == "warm-up"]
    assert len(warming.result(timeout=0)) < 6
