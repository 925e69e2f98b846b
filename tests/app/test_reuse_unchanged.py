"""Reusing the plain run changes nothing a user sees: on a real checkpoint of each family, a live route's answer
with the trace cache warm (the page's first view ran the plain run and kept it; the lesioned request reuses it and
runs only the lesioned run) is the same, byte for byte, as with the cache off (both runs computed afresh)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from inference.core.places import REPO_ROOT
from tests.app.conftest import HTMX

GERMAN = "Ein Hund läuft über die Wiese."
ENGLISH = "The river flows through the old town and into the sea."
# (family, path, the page's first view, the lesion the user then sets): a live route on a shipped checkpoint
ROUTES = [
    ("memory_transformer", "/explore/run", {"model": "memtransformer_10", "text": GERMAN},
     {"lesion": "memory_size", "memory_size.size": "5"}),
    ("hugging_face_translator", "/explore/run",
     {"model": "marian_de_en_4_epochs", "text": GERMAN, "stack": "decoder.cross_attn"},
     {"ablate": "decoder.layers.0.cross_attn:1"}),
    ("working_memory", "/memory/run", {"model": "working_memory_de_en", "text": GERMAN}, {"lesion": "mask_memory"}),
    ("language_model", "/ff/run", {"model": "language_model", "text": ENGLISH}, {"edits": "layers.1.ff:3,4 x0"}),
    ("hugging_face", "/ff/run", {"model": "gpt2_enwiki", "text": ENGLISH}, {"edits": "layers.0.ff:5 x10"}),
    ("recurrent_memory", "/segments/run", {"model": "rmt_copy"},
     {"lesion": "knockout_slots", "knockout_slots.slots": "1"}),
    ("pretrained_memory", "/segments/run", {"model": "gpt2_copy_memory10"},
     {"lesion": "knockout_slots", "knockout_slots.slots": "0"}),
    ("active_memory", "/state/run", {"model": "neural_gpu_addition"},
     {"lesion": "clamp_gate", "clamp_gate.gate": "update", "clamp_gate.value": "0.5"}),
]  # fmt: skip


def client_with_cache(tmp_path_factory, megabytes: int):
    database = tmp_path_factory.mktemp("reuse_db") / "memlens.sqlite3"
    settings = Settings(checkpoint_dir=REPO_ROOT / "checkpoints", device="cpu", database=database,
                        max_cache_mb=megabytes)  # fmt: skip
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    yield from client_with_cache(tmp_path_factory, 0)


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    yield from client_with_cache(tmp_path_factory, 512)


def example_of(client: TestClient, form: dict) -> dict:
    """The form with the model's own example where it names no text (a task model reads its own notation)."""
    if "text" in form:
        return form
    return {**form, "text": client.app.state.gateway.registry.entries[form["model"]].record.example}


@pytest.mark.parametrize(("family", "path", "view", "lesion"), ROUTES, ids=[route[0] for route in ROUTES])
def test_a_lesion_on_the_kept_plain_run_answers_as_a_fresh_one(cold, warm, family, path, view, lesion):
    gateway = warm.app.state.gateway
    first = warm.post(path, data=example_of(warm, view), headers=HTMX)
    assert first.status_code == 200, first.text
    kept = gateway.recent_runs
    reused = warm.post(path, data={**example_of(warm, view), **lesion}, headers=HTMX)
    assert reused.status_code == 200, reused.text
    assert gateway.recent_runs == kept + 1  # the lesioned run only: the plain one came from the cache
    fresh = cold.post(path, data={**example_of(cold, view), **lesion}, headers=HTMX)
    assert fresh.status_code == 200, fresh.text
    assert cold.app.state.gateway.recent_runs == 0
    assert reused.text == fresh.text
    assert reused.text != first.text  # the lesion shows
