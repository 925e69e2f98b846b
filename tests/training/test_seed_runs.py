"""A config trained again under another seed: named and stored apart, a
different model, counted with the shipped run only when trained as long, and
the spread over the seeds computed from their stored test outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from inference.analyses.quality import corpus_quality
from inference.core.checkpoint import load_checkpoint
from tests.training.conftest import make_tiny_config
from training.cli import main
from training.comparisons import Comparisons
from training.corpora import CORPORA
from training.outputs import AS_TRAINED, read_outputs
from training.seed_runs import seed_runs, seed_spread, seeded_config


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, synthetic_data_dir):
    """checkpoints/ with the tiny run (seed 0), its seed 2 (as long) and seed 3 (one epoch fewer), outputs stored."""
    root = tmp_path_factory.mktemp("seeds")
    checkpoints = root / "checkpoints"
    options = ["--data-dir", str(synthetic_data_dir), "--device", "cpu"]
    for epochs, seed, out in ((2, None, "tiny"), (2, 2, "seeds/tiny/seed_2"), (1, 3, "seeds/tiny/seed_3")):
        config = root / f"tiny_{epochs}.json"
        config.write_text(json.dumps(make_tiny_config("tiny", epochs=epochs).to_dict()))
        seed_option = [] if seed is None else ["--seed", str(seed)]
        run_dir = root / "runs" / out
        command = ["train", str(config), *seed_option, *options, "--out", str(checkpoints / out), "--run-dir"]
        assert main([*command, str(run_dir)]) == 0
    folders = [str(checkpoints / out) for out in ("tiny", "seeds/tiny/seed_2", "seeds/tiny/seed_3")]
    assert main(["outputs", *folders, *options]) == 0
    return checkpoints


def test_a_seeded_config_differs_only_in_name_and_seed():
    config = make_tiny_config("tiny")
    seeded_2 = seeded_config(config, 2)
    assert (seeded_2.name, seeded_2.train.seed, config.train.seed) == ("tiny_seed2", 2, 0)
    for part in ("model", "data"):
        assert seeded_2.to_dict()[part] == config.to_dict()[part]
    assert {k: v for k, v in seeded_2.to_dict()["train"].items() if k != "seed"} == {
        k: v for k, v in config.to_dict()["train"].items() if k != "seed"
    }


def test_a_seed_run_is_another_model_that_records_its_seed(seeded):
    shipped, other = load_checkpoint(seeded / "tiny", "cpu"), load_checkpoint(seeded / "seeds/tiny/seed_2", "cpu")
    assert (shipped.meta["seed"], other.meta["seed"]) == (0, 2)
    first, second = (
        load_file(seeded / "tiny" / "model.safetensors"),
        load_file(seeded / "seeds/tiny/seed_2/model.safetensors"),
    )
    assert first.keys() == second.keys() and any(not torch.equal(first[k], second[k]) for k in first)


def test_only_runs_as_long_as_the_shipped_one_are_counted(seeded, synthetic_data_dir):
    comparisons = Comparisons(seeded, synthetic_data_dir)
    assert seed_runs(comparisons, "tiny") == {0: "tiny", 2: "seeds/tiny/seed_2"}  # seed 3 ran 1 epoch, not 2
    assert seed_runs(comparisons, "not_trained") == {}


def test_the_spread_is_the_mean_and_sample_std_of_the_seeds_scores(seeded, synthetic_data_dir):
    references = [ref for _, ref in CORPORA["multi30k"].read(synthetic_data_dir)["test_2016_flickr"]]
    scores = []
    for folder in ("tiny", "seeds/tiny/seed_2"):
        scores.append(corpus_quality(read_outputs(seeded / folder)["outputs"][AS_TRAINED], references))
    bleu, chrf = np.array([s.bleu for s in scores]), np.array([s.chrf for s in scores])
    table = seed_spread(Comparisons(seeded, synthetic_data_dir), {"tiny": "Tiny", "not_trained": "Absent"})
    assert len(table) == 3  # header, rule, one row: a model with no run is left out
    row = table[2]
    assert row.startswith("| Tiny | 2 | 0, 2 | ")
    assert f"| {bleu.mean():.2f} ± {bleu.std(ddof=1):.2f} |" in row
    assert f"| {chrf.mean():.2f} ± {chrf.std(ddof=1):.2f} |" in row
    assert row.endswith(f"| {scores[0].bleu:.2f}, {scores[1].bleu:.2f} |")
