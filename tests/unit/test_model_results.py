"""What a checkpoint measured (metrics.json) is typed: every shipped file reads, unchanged; a key misspelt or of the
wrong shape fails where it is written and where a folder is read (listed broken, saying which field)."""

from __future__ import annotations

import json

import pytest

from inference.core.checkpoint import CheckpointRegistry, load_checkpoint, save_checkpoint, store_study
from inference.core.model_results import LesionCurve, ModelResults, ResultsError, needed, read_results
from inference.core.places import REPO_ROOT
from tests.conftest import make_tiny

SHIPPED = sorted((REPO_ROOT / "checkpoints").rglob("metrics.json"))


def test_every_shipped_results_file_reads_and_writes_back_unchanged_but_for_its_version():
    assert len(SHIPPED) >= 200  # the served checkpoints and the recorded runs
    migrated = 0
    for path in SHIPPED:
        values = json.loads(path.read_text())
        written = read_results(values).model_dump(mode="json", exclude_none=True)
        if "variant" in values:  # version 1: a segment task run's description of what it carries
            assert written["memory_setup"] == values["variant"] and "variant" not in written
            written["variant"] = written.pop("memory_setup")
            migrated += 1
        assert json.dumps(written, sort_keys=True) == json.dumps({"version": 2, **values}, sort_keys=True), path
    assert migrated == 161  # every shipped segment task run, none rewritten


def test_fields_are_read_as_their_types():
    results = read_results(
        {"bleu": {"val": 27.5}, "lesion": {"memory_size": [0, 10], "bleu": [12.0, 27.5]}, "curve": [[100, 2.5, 0.1]]}
    )
    assert results.bleu == {"val": 27.5} and results.chrf is None
    assert results.lesion == LesionCurve(memory_size=[0, 10], bleu=[12.0, 27.5])
    dumped = results.model_dump(mode="json", exclude_none=True)
    assert json.dumps(dumped["curve"]) == "[[100, 2.5, 0.1]]"  # a step stays a whole number
    assert needed(results.bleu, "BLEU") == {"val": 27.5}
    with pytest.raises(ValueError, match="^the checkpoint's metrics.json has no perplexity$"):
        needed(results.perplexity, "perplexity")
    assert list(dumped) == ["version", "bleu", "lesion", "curve"]  # the version first, then as declared


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"blue": {"val": 1.0}}, "metrics.json: blue: Extra inputs are not permitted"),
        ({"bleu": {"val": "high"}}, "metrics.json: bleu.val: Input should be a valid number"),
        ({"lesion": {"memory_size": [0]}}, "metrics.json: lesion.bleu: Field required"),
    ],
)
def test_a_file_that_does_not_read_names_the_field(values, message):
    with pytest.raises(ResultsError, match=f"^{message}"):
        read_results(values)


def test_a_misspelt_key_fails_where_it_is_written_and_where_a_folder_is_read(tiny_tokenizer, tmp_path):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    with pytest.raises(ResultsError, match="blue: Extra inputs are not permitted"):
        save_checkpoint(tmp_path / "written", loaded.model, loaded.tokenizer, metrics={"blue": {"val": 1.0}})
    assert not (tmp_path / "written").exists()  # nothing written
    folder = save_checkpoint(tmp_path / "edited", loaded.model, loaded.tokenizer, metrics={"bleu": {"val": 1.0}})
    with pytest.raises(ResultsError, match="carried_state: Input should be a valid dictionary"):
        store_study(folder, "carried_state", "not a record")  # type: ignore[arg-type]
    (folder / "metrics.json").write_text(json.dumps({"bleu": {"val": 1.0}, "chrF": {"val": 50.0}}))
    entry = CheckpointRegistry(tmp_path, device="cpu").entries["edited"]
    assert entry.error == "metrics.json: chrF: Extra inputs are not permitted"
    assert isinstance(load_checkpoint(REPO_ROOT / "checkpoints" / "memtransformer_10", "cpu").metrics, ModelResults)
