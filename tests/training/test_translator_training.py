"""A Hugging Face translator trained by our CLI's run, at test size: a tiny Marian and a tiny T5 train on the
generated Multi30k (their loss falls), are written as ordinary Hugging Face folders (config.json with the settings
the training config named, model.safetensors, tokenizer.json, memlens.json), open through the Hugging Face
translator family as German-reading translators, and store-half rounds them to float16 with the same BLEU."""

from __future__ import annotations

import json

import pytest
from safetensors import safe_open

from inference.core.checkpoint import CheckpointRegistry, load_checkpoint
from inference.core.tracing import run_with_trace
from training.loop.config import config_from_dict
from training.loop.translation_run import run_training, store_half

SIZES = {"d_model": 16, "d_ff": 32, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "max_positions": 32}
SETTINGS = {"marian": {"activation_function": "relu", "scale_embedding": True}, "t5": {"d_kv": 8}}


def translator_config(model_type: str):
    return config_from_dict(
        {
            "name": f"tiny_{model_type}",
            "model": {
                "family": "hugging_face_translator",
                "model_type": model_type,
                **SIZES,
                "hf_config": SETTINGS[model_type],
            },  # fmt: skip
            "data": {"dataset": "multi30k", "vocab_size": 60, "max_len": 24},
            "train": {"epochs": 3, "batch_size": 16, "warmup_steps": 20, "seed": 0, "save_every_steps": 8},
        }
    )


@pytest.fixture(scope="module", params=["marian", "t5"])
def trained(request, tmp_path_factory, synthetic_data_dir):
    root = tmp_path_factory.mktemp(request.param)
    config = translator_config(request.param)
    folder = run_training(config, synthetic_data_dir, root / "checkpoints" / config.name, root / "run", device="cpu")
    return request.param, folder, synthetic_data_dir


def test_it_trains_and_is_written_as_a_hugging_face_folder(trained):
    model_type, folder, _ = trained
    metrics = json.loads((folder / "metrics.json").read_text())
    curve = metrics["train"]["loss_curve"]
    assert len(curve) == 3 and curve[-1] < curve[0] - 0.5
    config = json.loads((folder / "config.json").read_text())
    assert "format_version" not in config and config["model_type"] == model_type
    assert {key: config[key] for key in SETTINGS[model_type]} == SETTINGS[model_type]  # the settings it was given
    assert config["decoder_start_token_id"] == 1 and config["pad_token_id"] == 0  # BOS of our tokenizer's layout
    meta = json.loads((folder / "memlens.json").read_text())
    assert meta["source_language"] == "German" and meta["version"] == 2  # the family is the folder's config's
    registry = CheckpointRegistry(folder.parent, device="cpu")
    loaded = registry.get(folder.name)
    assert loaded.config.family == "hugging_face_translator" and loaded.record.format == "Hugging Face"
    trace = run_with_trace(loaded, "ein hund", names=["decoder.layers.0.cross_attn.pattern"], max_new_tokens=6)
    assert trace.tensor("decoder.layers.0.cross_attn.pattern").shape[-1] == len(loaded.tokenizer.encode("ein hund")) + 1


def test_store_half_rounds_it_to_float16_with_the_same_bleu(trained):
    _, folder, data_dir = trained
    before = json.loads((folder / "metrics.json").read_text())
    store_half(folder, data_dir, device="cpu")
    with safe_open(str(folder / "model.safetensors"), framework="pt") as weights:
        assert {str(weights.get_slice(name).get_dtype()) for name in weights.keys()} == {"F16"}
    after = json.loads((folder / "metrics.json").read_text())
    for split, bleu in before["bleu"].items():
        assert after["bleu"][split] == pytest.approx(bleu, abs=1.0)
    assert load_checkpoint(folder, "cpu").record.weights_dtype == "float16"
