"""Paper 001's translation models train through the translation run on
generated Multi30k, report teacher-forced perplexity, and the comparison
(BLEU, chrF, length ratio, BLEU by source length, bootstrap of the
difference) is measured and rendered."""

from __future__ import annotations

import json
import math

import pytest

from training.evaluation.active_memory_comparison import BUCKETS, COMPARISON, measure_translation
from training.evaluation.translation import perplexity
from training.loop.config import config_from_dict
from training.loop.translation_run import run_training
from training.report.active_memory import translation_tables

TRAIN = {"epochs": 2, "batch_size": 16, "warmup_steps": 20, "seed": 3, "save_every_steps": 8, "threads": 1}
DATA = {"dataset": "multi30k", "vocab_size": 60, "max_len": 24}
MODELS = {
    "extended_neural_gpu_de_en": {"family": "active_memory", "variant": "extended", "maps": 8, "width": 2,
                                  "length_factor": 1.5, "scheduled_sampling": 0.1},
    "gru_attention_de_en": {"family": "gru_attention", "embed_size": 8, "d_model": 16},
}  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory, synthetic_data_dir):
    root = tmp_path_factory.mktemp("active_memory")
    configs = root / "configs"
    configs.mkdir()
    for name, model in MODELS.items():
        values = {"name": name, "model": model, "data": DATA, "train": TRAIN}
        (configs / f"{name}.json").write_text(json.dumps(values))
        run_training(config_from_dict(values), synthetic_data_dir, root / "checkpoints" / name, root / "runs" / name)
    return root


@pytest.mark.parametrize("name", list(MODELS))
def test_loss_falls_and_perplexity_is_reported(trained, name):
    metrics = json.loads((trained / "checkpoints" / name / "metrics.json").read_text())
    assert metrics["train"]["loss_curve"][-1] < metrics["train"]["loss_curve"][0]
    assert set(metrics["perplexity"]) == {"val", "test_2016_flickr"}
    assert 1.0 < metrics["perplexity"]["test_2016_flickr"] < 60  # below a uniform guess over the vocabulary


def test_perplexity_is_the_exponent_of_the_mean_target_loss(trained, synthetic_data_dir):
    from inference.core.checkpoint import load_checkpoint
    from training.data.translation import read_multi30k

    loaded = load_checkpoint(trained / "checkpoints" / "gru_attention_de_en", "cpu")
    pairs = read_multi30k(synthetic_data_dir, "test_2016_flickr")[:1]
    (source, reference) = pairs[0]
    src = loaded.tokenizer.encode_sources([source])
    target = loaded.tokenizer.encode(reference)
    import torch

    with torch.no_grad():
        logits = loaded.model(torch.tensor(src), torch.tensor([[loaded.config.bos_id, *target]]))
    nll = torch.nn.functional.cross_entropy(logits[0], torch.tensor([*target, loaded.config.eos_id]))
    assert perplexity(loaded.model, loaded.tokenizer, pairs) == pytest.approx(math.exp(nll.item()), rel=1e-5)


def test_comparison_is_measured_and_rendered(trained, synthetic_data_dir):
    lines = []
    comparison = measure_translation(trained / "checkpoints", trained / "configs", synthetic_data_dir, log=lines.append)
    assert set(comparison["models"]) == {"Extended Neural GPU, 2 epochs", "GRU + attention, 2 epochs"}
    assert sum("left out" in line for line in lines) == 6  # the six runs not trained here are listed as missing
    row = comparison["models"]["Extended Neural GPU, 2 epochs"]
    assert row["seed"] == 3 and row["epochs"] == 2 and 0 < row["length_ratio"]
    assert set(row["by_source_length"]) == {label for label, _, _ in BUCKETS}
    assert sum(comparison["bucket_sentences"].values()) == 16
    (difference,) = comparison["differences"]
    for metric in ("bleu", "chrf"):
        overall = difference["overall"][metric]
        assert overall["low"] <= overall["difference"] <= overall["high"] and 0 < overall["p_value"] <= 1
    table = "\n".join(translation_tables(trained / "checkpoints"))
    assert "| Extended Neural GPU, 2 epochs |" in table and "30.1 / < 5" not in table
    assert "| Extended Neural GPU, 2 epochs - GRU + attention, 2 epochs, chrF |" in table


def test_a_model_without_weights_keeps_its_stored_row_and_a_pair_of_them_their_interval(trained, synthetic_data_dir):
    checkpoints = trained / "checkpoints"
    first = measure_translation(checkpoints, trained / "configs", synthetic_data_dir, log=lambda line: None)
    measured = first["models"]["Extended Neural GPU, 2 epochs"]
    one_epoch = {"folder": "active_memory_translation/gru_attention_de_en_1epoch", "bleu": 8.4, "chrf": 26.4}
    pair = {
        "a": "Extended Neural GPU, 1 epoch",
        "b": "GRU + attention, 1 epoch",
        "overall": {"bleu": {"difference": -6.6}},
    }
    stale = {**measured, "bleu": 99.0}  # a model with weights here is measured again, whatever was stored
    (checkpoints / COMPARISON).write_text(json.dumps({**first, "differences": [pair], "models": {
        "Extended Neural GPU, 1 epoch": {**one_epoch, "bleu": 1.8}, "GRU + attention, 1 epoch": one_epoch,
        "Neural GPU, 1 epoch": {**one_epoch, "bleu": 1.9}, "Extended Neural GPU, 2 epochs": stale}}))  # fmt: skip
    lines = []
    try:
        comparison = measure_translation(checkpoints, trained / "configs", synthetic_data_dir, log=lines.append)
    finally:
        (checkpoints / COMPARISON).unlink()  # the other tests measure from nothing stored
    assert list(comparison["models"]) == [
        "Neural GPU, 1 epoch", "Extended Neural GPU, 1 epoch", "GRU + attention, 1 epoch",
        "Extended Neural GPU, 2 epochs", "GRU + attention, 2 epochs",
    ]  # fmt: skip
    assert comparison["models"]["GRU + attention, 1 epoch"] == one_epoch
    assert comparison["models"]["Extended Neural GPU, 2 epochs"]["bleu"] == measured["bleu"] != 99.0
    assert [(d["a"], d["b"]) for d in comparison["differences"]] == [
        ("Extended Neural GPU, 1 epoch", "GRU + attention, 1 epoch"),
        ("Extended Neural GPU, 2 epochs", "GRU + attention, 2 epochs"),
    ]
    assert comparison["differences"][0] == pair
    assert sum("its stored row kept" in line for line in lines) == 3
    assert sum("left out" in line for line in lines) == 3  # Markovian and the 8-epoch runs
