"""Checkpoint folders: exact round trip, no unpickling, broken entries reported."""

import json
import shutil

import pytest
import torch
from safetensors import safe_open

from inference.core.checkpoint import CheckpointError, CheckpointRegistry, load_checkpoint, save_checkpoint
from inference.core.model_record import ModelRecord
from inference.core.model_results import ModelResults
from inference.core.tracing import run_with_trace
from tests.conftest import SOURCES, make_tiny


def write(folder, loaded):
    return save_checkpoint(
        folder, loaded.model, loaded.tokenizer, meta={"family": loaded.config.family}, metrics={"bleu": {"val": 1.0}}
    )


def test_checkpoint_round_trips_exactly(tiny, tmp_path):
    folder = write(tmp_path / "model", tiny)
    loaded = load_checkpoint(folder, "cpu")
    assert loaded.config == tiny.config
    original, restored = tiny.model.state_dict(), loaded.model.state_dict()
    assert original.keys() == restored.keys()
    assert all(torch.equal(original[k], restored[k]) for k in original)
    assert torch.equal(run_with_trace(tiny, SOURCES).logits, run_with_trace(loaded, SOURCES).logits)
    assert loaded.metrics == ModelResults(bleu={"val": 1.0})


def test_shared_controller_stays_shared_after_loading(tiny_tokenizer, tmp_path):
    loaded = load_checkpoint(write(tmp_path / "shared", make_tiny("memctrl_shared", tiny_tokenizer)), "cpu")
    layers = loaded.model.encoder.layers
    assert layers[0].mem.attn.q_proj.weight is layers[1].mem.attn.q_proj.weight
    assert layers[0].seq.attn.q_proj.weight is not layers[1].seq.attn.q_proj.weight


@pytest.fixture
def registry_root(tiny_tokenizer, tmp_path):
    """A root with one good checkpoint and one broken copy per failure kind."""
    good = write(tmp_path / "good", make_tiny("memtransformer", tiny_tokenizer))

    def broken(name, damage):
        folder = tmp_path / name
        shutil.copytree(good, folder)
        damage(folder)

    broken("no_weights", lambda f: (f / "model.safetensors").unlink())
    broken("no_tokenizer", lambda f: (f / "tokenizer.json").unlink())
    broken("bad_json", lambda f: (f / "config.json").write_text("{not json"))
    broken("bad_metrics", lambda f: (f / "metrics.json").write_text("[1, 2"))

    def wider_ff(folder):
        config = json.loads((folder / "config.json").read_text())
        config["model"]["d_ff"] = 64
        (folder / "config.json").write_text(json.dumps(config))

    broken("shape_mismatch", wider_ff)

    def unknown_family(folder):
        config = json.loads((folder / "config.json").read_text())
        config["model"]["family"] = "lstm"
        (folder / "config.json").write_text(json.dumps(config))

    broken("unknown_family", unknown_family)
    broken(
        "truncated_weights",
        lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:100]),
    )
    return tmp_path


def test_registry_reports_broken_checkpoints_with_reasons(registry_root):
    registry = CheckpointRegistry(registry_root, device="cpu")
    assert registry.available() == ["good"]
    reasons = registry.broken()
    assert "model.safetensors is missing" in reasons["no_weights"]
    assert "tokenizer.json is missing" in reasons["no_tokenizer"]
    assert "config.json is not valid JSON" in reasons["bad_json"]
    assert "metrics.json is not valid JSON" in reasons["bad_metrics"]
    assert "shape mismatch" in reasons["shape_mismatch"] and "d_ff" not in reasons["shape_mismatch"]
    assert "unknown family 'lstm'" in reasons["unknown_family"]
    assert "cannot be read" in reasons["truncated_weights"]
    assert registry.get("good").config.memory_size == 3
    with pytest.raises(CheckpointError, match="unavailable"):
        registry.get("shape_mismatch")
    with pytest.raises(KeyError):
        registry.get("absent")


def test_registry_loads_lazily_and_once(registry_root):
    registry = CheckpointRegistry(registry_root, device="cpu")
    assert not registry._loaded
    assert registry.get("good") is registry.get("good")


def test_registry_of_missing_root_is_empty(tmp_path):
    assert CheckpointRegistry(tmp_path / "nowhere", device="cpu").entries == {}


def test_loading_never_unpickles(tiny_tokenizer, tmp_path, monkeypatch):
    folder = write(tmp_path / "m", make_tiny("memctrl", tiny_tokenizer))

    def refuse(*args, **kwargs):
        raise AssertionError("checkpoint loading must not unpickle")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr("pickle.load", refuse)
    monkeypatch.setattr("pickle.loads", refuse)
    load_checkpoint(folder, "cpu")


def test_device_setting(monkeypatch):
    from inference.core.places import select_device

    monkeypatch.setenv("MEMLENS_DEVICE", "cpu")
    assert select_device() == torch.device("cpu")
    monkeypatch.delenv("MEMLENS_DEVICE")
    assert select_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_weights_gone_after_the_scan_are_reported_on_load(tiny_tokenizer, tmp_path):
    folder = write(tmp_path / "vanishing", make_tiny("memtransformer", tiny_tokenizer))
    registry = CheckpointRegistry(tmp_path, device="cpu")
    assert registry.entries["vanishing"].ok
    (folder / "model.safetensors").write_bytes(b"")  # replaced between the scan and the first use
    with pytest.raises(CheckpointError):
        registry.get("vanishing")
    assert not registry.entries["vanishing"].ok


def test_float16_checkpoint_loads_as_float32_rounded_weights(tiny, tmp_path):
    folder = save_checkpoint(
        tmp_path / "half", tiny.model, tiny.tokenizer, meta={"family": tiny.config.family}, weights_dtype="float16"
    )
    with safe_open(str(folder / "model.safetensors"), framework="pt") as stored:
        assert {stored.get_slice(name).get_dtype() for name in stored.keys()} == {"F16"}
    loaded = load_checkpoint(folder, "cpu")
    assert loaded.record == ModelRecord(weights_dtype="float16")  # version 0's "family" read away
    assert json.loads((folder / "config.json").read_text())["meta"] == {"version": 2, "weights_dtype": "float16"}
    original, restored = tiny.model.state_dict(), loaded.model.state_dict()
    assert original.keys() == restored.keys()
    for name in original:
        assert original[name].dtype == restored[name].dtype == torch.float32, name  # the saved model is left as it was
        assert torch.equal(restored[name], original[name].half().float()), name
    # Saved again in float32 (e.g. after fine-tuning), the record no longer claims float16.
    assert (
        load_checkpoint(save_checkpoint(tmp_path / "full", loaded.model, loaded.tokenizer, loaded.record), "cpu").record
        == ModelRecord()
    )


def test_float16_refuses_weights_it_cannot_hold(tiny_tokenizer, tmp_path):
    loaded = make_tiny("transformer", tiny_tokenizer)
    with torch.no_grad():
        next(p for p in loaded.model.parameters() if p.numel()).view(-1)[0] = 1e5  # float16 tops out at 65504
    with pytest.raises(ValueError, match="range"):
        save_checkpoint(tmp_path / "huge", loaded.model, loaded.tokenizer, weights_dtype="float16")


def test_a_folder_of_run_results_is_not_a_checkpoint(registry_root):
    """checkpoints/tasks/ holds run folders (config and metrics, weights local): not a broken model."""
    runs = registry_root / "task_runs"
    shutil.copytree(registry_root / "good", runs / "copy_run")
    (runs / "copy_run" / "model.safetensors").unlink()
    (registry_root / "empty").mkdir()
    registry = CheckpointRegistry(registry_root, device="cpu")
    assert "task_runs" not in registry.entries
    assert "config.json is missing" in registry.broken()["empty"]


def test_run_results_two_levels_down_are_not_a_checkpoint(registry_root):
    """checkpoints/seeds/<model>/seed_<n>/ holds run results two levels down: not a broken model either."""
    seeds = registry_root / "seeds"
    shutil.copytree(registry_root / "good", seeds / "transformer" / "seed_2")
    (seeds / "transformer" / "seed_2" / "model.safetensors").unlink()
    registry = CheckpointRegistry(registry_root, device="cpu")
    assert "seeds" not in registry.entries and "seeds" not in registry.broken()
