"""A large model's first page open shows its load and then the page (app/services/model_loading.py): here a tiny
Hugging Face folder served with the notice threshold at 0 MB, so that it counts as large."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.app.conftest import HTMX
from tests.hugging_face_models import build_folder

MODEL = "my_gpt2"


@pytest.fixture
def client(tmp_path, checkpoint_dir):
    build_folder("gpt2", tmp_path / "models" / MODEL)
    settings = Settings(checkpoint_dir=checkpoint_dir, models_dirs=[tmp_path / "models"], device="cpu",
                        database=tmp_path / "memlens.sqlite3", load_notice_mb=0, warm_up=False)  # fmt: skip
    with TestClient(create_app(settings)) as client:
        yield client


def test_the_first_open_shows_the_load_then_the_page(client):
    weights = sum(
        path.stat().st_size for path in client.app.state.model_loads.registry.entries[MODEL].path.glob("*.safetensors")
    )
    first = client.get("/ff", params={"model": MODEL})
    assert first.status_code == 200 and "<h1>Loading my_gpt2</h1>" in first.text
    assert f"Reading {weights / 1e6:,.0f} MB of weights into memory" in first.text
    assert f'hx-get="/models/{MODEL}/loading"' in first.text and "<progress" in first.text
    deadline = time.monotonic() + 60
    while (status := client.get(f"/models/{MODEL}/loading", headers=HTMX)).status_code == 200:
        assert "s so far" in status.text and time.monotonic() < deadline
    assert status.status_code == 204 and status.headers["HX-Refresh"] == "true"
    assert MODEL in client.app.state.gateway.registry.loaded()
    page = client.get("/ff", params={"model": MODEL})
    assert page.status_code == 200 and "Loading" not in page.text and f'<option value="{MODEL}" selected' in page.text


def test_only_pages_opened_in_the_browser_wait_for_the_load(client):
    """htmx's requests and the JSON API load the model within the request, as before."""
    keys = client.get("/ff/keys", params={"model": MODEL, "layer": 0, "key": "3"}, headers=HTMX)
    assert keys.status_code == 200 and 'data-key="layers.0.ff:3"' in keys.text
    assert "Loading" not in client.get("/ff", params={"model": MODEL}).text  # loaded by the request above


def test_an_unknown_models_load_is_a_404(client):
    response = client.get("/models/nobody/loading", headers=HTMX)
    assert response.status_code == 404 and "unknown model" in response.text


def test_a_page_that_cannot_show_the_model_refuses_it_without_loading_it(client):
    response = client.get("/segments", params={"model": MODEL})
    assert response.status_code == 400 and "is not a segment model" in response.text
    assert "its views are on the FF memories (/ff) and explore (/explore) pages" in response.text
    assert MODEL not in client.app.state.gateway.registry.loaded() and client.app.state.model_loads.of(MODEL) is None
