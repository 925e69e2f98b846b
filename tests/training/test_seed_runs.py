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
from training.data.corpora import CORPORA
from training.evaluation.comparisons import Comparisons
from training.evaluation.outputs import AS_TRAINED, read_outputs
from training.loop.seed_runs import seed_runs, seed_spread, seeded_config


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
    assert (shipped.record.seed, other.record.seed) == (0, 2)
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


def test_the_working_memory_lesions_are_compared_within_every_seed(tmp_path, synthetic_data_dir):
    """Each seed run trained as long as the shipped one gets its own masked and size-0 rows, each against that
    seed's own unmasked run; the plain Transformer is compared with the shipped run (no corpus model needed:
    the stored outputs are made from the references)."""
    import gzip

    import sacrebleu

    from inference.core.checkpoint import FORMAT_VERSION
    from training.evaluation.outputs import MASKED, OUTPUTS_FILE, memory_condition
    from training.report.comparison_tables import working_memory_conditions

    references = [ref for _, ref in CORPORA["multi30k"].read(synthetic_data_dir)["test_2016_flickr"]]

    def drop_last_word(sentences: list[str], every: int) -> list[str]:
        return [" ".join(s.split()[:-1]) if i % every == 0 else s for i, s in enumerate(sentences)]

    def stored_run(folder: str, seed: int, epochs: int, outputs: dict[str, list[str]]) -> None:
        path = tmp_path / folder
        path.mkdir(parents=True)
        model = {
            "family": "memory_transformer",
            "variant": "memtransformer",
            "memory_size": 4,
        }  # the config's other fields: their defaults
        config = {"format_version": FORMAT_VERSION, "model": model, "meta": {"seed": seed}}
        (path / "config.json").write_text(json.dumps(config))
        (path / "metrics.json").write_text(json.dumps({"train": {"epochs": epochs}}))
        record = {"split": "test_2016_flickr", "sentences": len(references), "outputs": outputs}
        (path / OUTPUTS_FILE).write_bytes(gzip.compress(json.dumps(record).encode()))

    def lesioned(every: int) -> dict[str, list[str]]:
        return {
            AS_TRAINED: drop_last_word(references, every),
            MASKED: drop_last_word(references, 2),
            memory_condition(0): references,
        }

    stored_run("wm", 1, 20, lesioned(3))
    stored_run("seeds/wm/seed_2", 2, 20, lesioned(5))
    stored_run("seeds/wm/seed_3", 3, 19, lesioned(7))  # not trained as long: left out
    stored_run("plain", 1, 20, {AS_TRAINED: drop_last_word(references, 4)})
    table = working_memory_conditions(Comparisons(tmp_path, synthetic_data_dir), "wm", {"plain": "Plain"})
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in table if line.startswith("| ")}

    def bleu(sentences: list[str]) -> float:
        return sacrebleu.corpus_bleu(sentences, [references]).score

    assert [label for label in rows if label.startswith("working memory")] == [
        f"working memory, seed {k}{suffix}"
        for k in (1, 2)
        for suffix in ("", ", masked (against unmasked)", ", size 0 (against as trained)")
    ]
    seed_2 = lesioned(5)
    masked = rows["working memory, seed 2, masked (against unmasked)"]
    assert masked[1] == f"{bleu(seed_2[MASKED]):.2f}"
    assert masked[4].startswith(f"{bleu(seed_2[MASKED]) - bleu(seed_2[AS_TRAINED]):+.2f} [")
    size_0 = rows["working memory, seed 2, size 0 (against as trained)"]
    assert size_0[4].startswith(f"{bleu(references) - bleu(seed_2[AS_TRAINED]):+.2f} [")
    plain = rows["Plain (against working memory, seed 1)"]
    assert plain[4].startswith(f"{bleu(drop_last_word(references, 4)) - bleu(lesioned(3)[AS_TRAINED]):+.2f} [")
    alone = working_memory_conditions(Comparisons(tmp_path, synthetic_data_dir), "seeds/wm/seed_3", {})
    assert [line.split(" | ")[0] for line in alone[2:5]] == [
        "| working memory",
        "| working memory, masked (against unmasked)",
        "| working memory, size 0 (against as trained)",
    ]
