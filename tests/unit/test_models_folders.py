"""Models folders beside the checkpoints (`memlens --models-dir DIR`, repeatable; the MEMLENS_MODELS_DIRS setting):
every model folder found is served or listed as broken with the reason, a name is served once, and a client only
ever names a model, never a path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from inference.core.checkpoint import CheckpointRegistry, save_checkpoint
from memlens_cli.main import main
from tests.conftest import make_tiny


@pytest.fixture
def folders(tiny_tokenizer, tmp_path):
    """Two roots: the checkpoints (tiny_mem) and a models folder (own_mem, a second tiny_mem, a Hugging Face
    folder without its weights, an empty folder)."""
    checkpoints, models = tmp_path / "checkpoints", tmp_path / "models"
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    for folder in (checkpoints / "tiny_mem", models / "own_mem", models / "tiny_mem"):
        save_checkpoint(folder, loaded.model, loaded.tokenizer, meta={"source_language": "German"})
    (models / "gpt2_folder").mkdir()
    (models / "gpt2_folder" / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 2}))
    (models / "empty").mkdir()
    return checkpoints, models


def test_the_registry_serves_every_root_and_names_each_model_once(folders):
    checkpoints, models = folders
    registry = CheckpointRegistry(checkpoints, "cpu", more_roots=[models])
    assert registry.available() == ["tiny_mem", "own_mem"]
    assert registry.entries["tiny_mem"].path == checkpoints / "tiny_mem"  # the checkpoints come first
    assert registry.broken() == {
        "empty": "config.json is missing",
        "gpt2_folder": "a Hugging Face folder MemLens cannot open: model.safetensors is missing",
        "tiny_mem-in-models": f"{checkpoints / 'tiny_mem'} has the same name 'tiny_mem': rename one of the folders",
    }
    assert CheckpointRegistry(checkpoints, "cpu", more_roots=[models / "nowhere"]).available() == ["tiny_mem"]


def test_the_cli_lists_and_translates_with_a_models_folder(folders, capsys):
    checkpoints, models = folders
    base = ["--checkpoints", str(checkpoints), "--models-dir", str(models), "--device", "cpu"]
    assert main([*base, "models"]) == 0
    out = capsys.readouterr().out
    assert "own_mem" in out and "gpt2_folder" in out and "BROKEN: a Hugging Face folder MemLens cannot open" in out
    assert main([*base, "translate", "--model", "own_mem", "ein Hund"]) == 0
    assert capsys.readouterr().out.startswith("ein Hund\t")
    assert main(["--checkpoints", str(checkpoints), "--device", "cpu", "translate", "--model", "own_mem", "x"]) == 2


def test_serve_passes_the_models_folders_to_the_app(folders, monkeypatch):
    import uvicorn

    checkpoints, models = folders
    served = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(app))
    assert main(["--checkpoints", str(checkpoints), "--models-dir", str(models), "--models-dir", "/x", "serve"]) == 0
    assert served[0].state.settings.models_dirs == [models, Path("/x")]


def test_the_app_lists_and_runs_a_model_from_a_models_folder(folders, tmp_path):
    checkpoints, models = folders
    settings = Settings(checkpoint_dir=checkpoints, models_dirs=[models], device="cpu", database=tmp_path / "db")
    with TestClient(create_app(settings)) as client:
        listed = client.get("/api/models").json()
        assert [m["name"] for m in listed["models"]] == ["tiny_mem", "own_mem"]
        assert {b["name"] for b in listed["broken"]} == {"empty", "gpt2_folder", "tiny_mem-in-models"}
        home = client.get("/").text
        assert "own_mem" in home and "a Hugging Face folder MemLens cannot open" in home
        answer = client.post("/api/translate", json={"model": "own_mem", "text": "ein Hund"})
        assert answer.status_code == 200 and answer.json()["model"] == "own_mem"
        for path_like in ("../checkpoints/tiny_mem", str(models / "own_mem"), "models/own_mem"):
            refused = client.post("/api/translate", json={"model": path_like, "text": "ein Hund"})
            assert refused.status_code == 422  # a name, never a path: refused where it enters
