"""The stored test outputs behind the results tables: one translation of every
headline test sentence per condition the tables compare, the same bytes when
nothing changed, and translated again when store-half changes the weights."""

from __future__ import annotations

import shutil

import pytest

from inference.analyses.quality import corpus_quality
from inference.core.checkpoint import load_checkpoint
from training.cli import main
from training.data.corpora import CORPORA
from training.evaluation.outputs import AS_TRAINED, OUTPUTS_FILE, memory_condition, read_outputs, write_outputs
from training.loop.translation_run import run_training


@pytest.fixture(scope="module")
def trained(tmp_path_factory, synthetic_data_dir, tiny_config):
    """A 2-epoch run of the tiny memory model (2 slots): its checkpoint folder."""
    root = tmp_path_factory.mktemp("outputs")
    return run_training(tiny_config(epochs=2), synthetic_data_dir, root / "tiny_outputs", root / "run", device="cpu")


def test_outputs_hold_every_condition_and_score_as_the_metrics(tmp_path, trained, synthetic_data_dir):
    folder = shutil.copytree(trained, tmp_path / "tiny")
    assert main(["outputs", str(folder), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 0
    record = read_outputs(folder)
    test = CORPORA["multi30k"].read(synthetic_data_dir)["test_2016_flickr"]
    assert record["split"] == "test_2016_flickr" and record["sentences"] == len(test)
    # lesion sizes 0, 2 (trained: the model as trained) and 5
    assert list(record["outputs"]) == [AS_TRAINED, memory_condition(0), memory_condition(5)]
    assert all(len(outputs) == len(test) for outputs in record["outputs"].values())
    results = load_checkpoint(folder, "cpu").metrics
    assert results.bleu is not None and results.lesion is not None
    references = [reference for _, reference in test]
    scored = {name: corpus_quality(outputs, references) for name, outputs in record["outputs"].items()}
    assert scored[AS_TRAINED].bleu == pytest.approx(results.bleu["test_2016_flickr"])
    by_size = dict(zip(results.lesion.memory_size, results.lesion.bleu))
    assert scored[memory_condition(0)].bleu == pytest.approx(by_size[0])
    assert scored[memory_condition(5)].bleu == pytest.approx(by_size[5])

    stored = (folder / OUTPUTS_FILE).read_bytes()
    assert main(["outputs", str(folder), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 0
    assert (folder / OUTPUTS_FILE).read_bytes() == stored  # no timestamp: nothing changed, nothing to commit


def test_each_condition_is_the_model_run_under_its_lesion():
    """On a shipped model and real sentences, each stored condition is what a traced run under that lesion
    outputs (another path through the model than the batched translation)."""
    from inference.core.interventions import Interventions, MemorySize
    from inference.core.places import REPO_ROOT
    from inference.core.tracing import run_with_trace
    from inference.runs.translate import MAX_NEW_TOKENS
    from training.evaluation.outputs import measure_outputs

    loaded = load_checkpoint(REPO_ROOT / "checkpoints" / "memtransformer_10", "cpu")
    lines = (REPO_ROOT / "app" / "data" / "demo.tsv").read_text().splitlines()[:4]
    pairs = [tuple(line.split("\t")) for line in lines]
    record = measure_outputs(loaded, "demo", pairs, log=lambda line: None)
    assert list(record["outputs"]) == [AS_TRAINED, *(memory_condition(k) for k in (0, 2, 5, 20, 30))]
    for size in (0, 5, 30):
        traced = run_with_trace(
            loaded,
            [s for s, _ in pairs],
            names=[],
            interventions=Interventions.of(MemorySize(size=size)),
            max_new_tokens=MAX_NEW_TOKENS,  # the same budget: with no memory the model runs on without EOS
        )
        assert record["outputs"][memory_condition(size)] == traced.outputs
    assert record["outputs"][memory_condition(0)] != record["outputs"][AS_TRAINED]  # the lesion changed outputs
    as_trained = run_with_trace(loaded, [s for s, _ in pairs], names=[], max_new_tokens=MAX_NEW_TOKENS)
    assert record["outputs"][AS_TRAINED] == as_trained.outputs


def test_store_half_translates_the_outputs_again_on_the_stored_weights(tmp_path, trained, synthetic_data_dir):
    folder = shutil.copytree(trained, tmp_path / "tiny_half")
    assert main(["outputs", str(folder), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 0
    before = read_outputs(folder)
    before["outputs"][AS_TRAINED] = ["stale"] * before["sentences"]
    write_outputs(folder, before)
    assert main(["store-half", str(folder), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 0
    after = read_outputs(folder)
    results = load_checkpoint(folder, "cpu").metrics
    assert results.bleu is not None
    references = [reference for _, reference in CORPORA["multi30k"].read(synthetic_data_dir)["test_2016_flickr"]]
    assert "stale" not in after["outputs"][AS_TRAINED]
    assert corpus_quality(after["outputs"][AS_TRAINED], references).bleu == pytest.approx(
        results.bleu["test_2016_flickr"]
    )
    assert not list(tmp_path.glob(".*"))


def test_a_model_that_does_not_translate_is_refused(synthetic_data_dir, capsys):
    from inference.core.places import REPO_ROOT

    folder = REPO_ROOT / "checkpoints" / "language_model"
    assert main(["outputs", str(folder), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 2
    assert "does not translate" in capsys.readouterr().err
    assert not (folder / OUTPUTS_FILE).exists()
