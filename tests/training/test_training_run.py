"""End to end on generated data: a tiny model trains, its loss falls, its
checkpoint folder serves through the app's registry, and an interrupted
run resumes exactly where it stopped."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from inference.core.checkpoint import FILES, CheckpointRegistry, load_checkpoint
from tests.training.conftest import make_tiny_config
from training.cli import main
from training.data.corpora import CORPORA
from training.evaluation.translation import score_splits
from training.loop.config import config_from_dict
from training.loop.epochs import TrainingData
from training.loop.run_dir import RunDirError
from training.loop.translation_run import evaluation_metrics, remeasure, run_training


@pytest.fixture(scope="module")
def trained(tmp_path_factory, synthetic_data_dir, tiny_config):
    """A 3-epoch run of the tiny config: (checkpoint root, checkpoint folder, run dir)."""
    root = tmp_path_factory.mktemp("trained")
    folder = run_training(
        tiny_config(), synthetic_data_dir, root / "checkpoints" / "tiny_test", root / "run", device="cpu"
    )
    return root / "checkpoints", folder, root / "run"


def test_loss_falls_and_metrics_are_complete(trained):
    _, folder, _ = trained
    metrics = json.loads((folder / "metrics.json").read_text())
    train = metrics["train"]
    assert train["epochs"] == 3 and train["steps"] == 3 * 16  # 256 pairs / batch 16
    assert len(train["loss_curve"]) == len(train["val_loss"]) == 3
    assert train["loss_curve"][-1] < train["loss_curve"][0] - 0.5
    assert train["val_loss"][-1] < train["val_loss"][0]
    assert train["device"] == "cpu" and train["seconds"] > 0
    assert set(metrics["bleu"]) == set(metrics["chrf"]) == {"val", "test_2016_flickr"}
    # Paper sizes up to 3x the trained 2 slots; the trained size is among them.
    assert metrics["lesion"]["memory_size"] == [0, 2, 5]
    assert len(metrics["lesion"]["bleu"]) == 3


def test_checkpoint_serves_through_the_registry(trained):
    root, folder, _ = trained
    registry = CheckpointRegistry(root, device="cpu")
    entry = registry.entries["tiny_test"]
    assert entry.ok, entry.error
    assert (entry.config.family, entry.config.variant) == ("memory_transformer", "memtransformer")
    assert entry.record.memory_size == 2
    assert entry.record.training_data == "Multi30k de-en, train (256 pairs)" and entry.record.corpus == "multi30k"
    loaded = registry.get("tiny_test")
    assert loaded.config.memory_size == 2
    assert loaded.config.vocab_size == loaded.tokenizer.vocab_size
    assert loaded.tokenizer.encode("hund") and loaded.tokenizer.encode("dog")  # one vocabulary for both languages


def test_rerun_of_a_finished_run_trains_no_more(trained, synthetic_data_dir, tiny_config):
    _, folder, run_dir = trained
    run_training(tiny_config(), synthetic_data_dir, folder, run_dir, device="cpu")
    assert json.loads((folder / "metrics.json").read_text())["train"]["steps"] == 48  # as a second run from scratch
    log = (run_dir / "train.log").read_text()  # so the log says that the rerun started from the finished state
    assert log.count(" start: ") == 1 and "resume at step 48: 3 epochs done, 0 batches into the next" in log


def test_resume_continues_the_same_run(tmp_path, synthetic_data_dir, tiny_config):
    """6 steps, paused, rerun to 10 steps == 10 steps at once: same weights,
    so position in the epoch, optimiser and dropout RNG were all restored."""
    config = tiny_config()
    straight = run_training(
        config, synthetic_data_dir, tmp_path / "straight", tmp_path / "run_straight", device="cpu", max_steps=10
    )
    paused = run_training(
        config, synthetic_data_dir, tmp_path / "resumed", tmp_path / "run_resumed", "cpu", max_steps=6, pause=True
    )
    assert paused == tmp_path / "run_resumed" and not (tmp_path / "resumed").exists()  # neither evaluated nor written
    state = torch.load(tmp_path / "run_resumed" / "state.pt", weights_only=True)
    assert state["progress"]["step"] == 6
    resumed = run_training(
        config, synthetic_data_dir, tmp_path / "resumed", tmp_path / "run_resumed", device="cpu", max_steps=10
    )

    assert json.loads((resumed / "metrics.json").read_text())["train"]["steps"] == 10
    assert "resume at step 6" in (tmp_path / "run_resumed" / "train.log").read_text()
    expected, found = load_file(straight / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert expected.keys() == found.keys()
    for name in expected:
        torch.testing.assert_close(found[name], expected[name], rtol=0, atol=0, msg=name)


def test_a_configured_max_steps_ends_the_run_past_an_epoch(tmp_path, synthetic_data_dir, tiny_config):
    """A budget of 20 steps (16 a epoch): paused at 8, resumed, the run ends at 20 and is evaluated and written,
    even asked to pause; run again, it trains no further."""
    config, run_dir, out = tiny_config(max_steps=20), tmp_path / "run", tmp_path / "out"
    assert run_training(config, synthetic_data_dir, out, run_dir, "cpu", max_steps=8, pause=True) == run_dir
    assert run_training(config, synthetic_data_dir, out, run_dir, "cpu", max_steps=30, pause=True) == out
    assert json.loads((out / "metrics.json").read_text())["train"]["steps"] == 20
    assert "end at the run's max_steps 20" in (run_dir / "train.log").read_text()
    run_training(config, synthetic_data_dir, out, run_dir, "cpu")
    assert json.loads((out / "metrics.json").read_text())["train"]["steps"] == 20
    assert torch.load(run_dir / "state.pt", weights_only=True)["progress"]["epoch"] == 1


def test_pause_needs_the_step_to_pause_at(capsys):
    with pytest.raises(SystemExit, match="--pause stops a run at --max-steps: give both"):
        main(["train", "any.json", "--pause"])


def test_the_metrics_name_every_device_that_trained_the_run(tmp_path, synthetic_data_dir, tiny_config):
    """A run that moves between machines records each device that trained it, and its metrics name them in
    order; a run whose epochs were all done elsewhere and is only evaluated here names where it trained."""
    config, run_dir, gpu = tiny_config(), tmp_path / "run", "NVIDIA H100 80GB HBM3"

    def as_if_trained_so_far_on_a_gpu() -> None:
        state = torch.load(run_dir / "state.pt", weights_only=True)
        state["progress"]["devices"] = [gpu]
        torch.save(state, run_dir / "state.pt")

    def trained_on(**limit) -> str:
        folder = run_training(config, synthetic_data_dir, tmp_path / "out", run_dir, device="cpu", **limit)
        return json.loads((folder / "metrics.json").read_text())["train"]["device"]

    assert trained_on(max_steps=6) == "cpu"
    as_if_trained_so_far_on_a_gpu()
    assert trained_on() == f"{gpu} then cpu"  # the remaining epochs on this CPU
    as_if_trained_so_far_on_a_gpu()
    assert trained_on() == gpu  # every epoch done: only evaluated here


def test_checkpoint_keeps_the_epoch_best_on_validation(tmp_path, synthetic_data_dir, tiny_config, monkeypatch):
    """Validation BLEU 5, 9, 7 after epochs 1-3: the checkpoint holds the weights after epoch 2, not the last,
    and says so; a run continued from it would continue the schedule from epoch 2's step."""
    scripted, weights_at = iter([5.0, 9.0, 7.0]), []

    def scripted_validation_bleu(data, model, tokenizer):
        weights_at.append({name: tensor.detach().clone() for name, tensor in model.state_dict().items()})
        return next(scripted)

    monkeypatch.setattr(TrainingData, "validation_bleu", scripted_validation_bleu)
    folder = run_training(
        tiny_config(eval_every_epochs=1), synthetic_data_dir, tmp_path / "best", tmp_path / "run", device="cpu"
    )
    train = json.loads((folder / "metrics.json").read_text())["train"]
    assert train["val_bleu"] == {"epoch": [1, 2, 3], "bleu": [5.0, 9.0, 7.0]}
    assert train["epochs"] == 3 and train["steps"] == 3 * 16
    assert train["selected_epoch"] == 2 and train["schedule_steps"] == 2 * 16
    shipped = load_file(folder / "model.safetensors")
    assert any(not torch.equal(shipped[name], weights_at[2][name]) for name in shipped)  # not the last epoch's
    for name in shipped:
        torch.testing.assert_close(shipped[name], weights_at[1][name], rtol=0, atol=0, msg=name)
    assert "the checkpoint keeps epoch 2 of 3" in (tmp_path / "run" / "train.log").read_text()
    description = json.loads((folder / "config.json").read_text())["meta"]["description"]
    assert "3 epochs on" in description and "the weights of epoch 2, the best on validation BLEU" in description


def test_run_dir_refuses_a_different_config(tmp_path, synthetic_data_dir, tiny_config):
    run_training(tiny_config(), synthetic_data_dir, tmp_path / "out", tmp_path / "run", device="cpu", max_steps=1)
    with pytest.raises(RunDirError, match="train"):
        run_training(
            tiny_config(epochs=5), synthetic_data_dir, tmp_path / "out", tmp_path / "run", device="cpu", max_steps=1
        )


def test_memory_extension_run_continues_from_a_checkpoint(tmp_path, trained, synthetic_data_dir):
    _, source, _ = trained
    config = config_from_dict(
        {
            "name": "tiny_grown",
            "init_from": str(source),  # absolute: used as is
            "grow_memory_to": 4,
            "data": {"dataset": "multi30k", "max_len": 24},
            "train": {"epochs": 1, "batch_size": 16, "warmup_steps": 20, "seed": 0},
        }
    )
    folder = run_training(config, synthetic_data_dir, tmp_path / "tiny_grown", tmp_path / "run", device="cpu")
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["train"]["steps"] == 16
    source_train = json.loads((source / "metrics.json").read_text())["train"]
    # the source's lr schedule continued from the step of the epoch its checkpoint keeps
    assert source_train["schedule_steps"] == 16 * source_train["selected_epoch"]
    assert metrics["train"]["schedule_steps"] == source_train["schedule_steps"] + 16
    assert metrics["lesion"]["memory_size"] == [0, 2, 4, 5, 10]
    registry = CheckpointRegistry(tmp_path, device="cpu")
    assert registry.get("tiny_grown").config.memory_size == 4
    assert registry.entries["tiny_grown"].record.memory_size == 4


def test_store_half_remeasures_metrics_on_the_float16_weights(tmp_path, trained, synthetic_data_dir, capsys):
    _, source, _ = trained
    folder = shutil.copytree(source, tmp_path / "tiny_half")
    before = json.loads((folder / "metrics.json").read_text())
    assert main(["store-half", str(folder), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert f"bleu.val: {before['bleu']['val']} -> " in out and "lesion.bleu[2]: " in out and "train." not in out

    loaded = load_checkpoint(folder, "cpu")
    assert loaded.record.weights_dtype == "float16" and {
        t.dtype for t in load_file(folder / "model.safetensors").values()
    } == {torch.float16}
    assert loaded.metrics.train == before["train"]
    # The numbers are those of the stored weights: measuring them again gives the same.
    expected = evaluation_metrics(
        loaded.model, loaded.tokenizer, CORPORA["multi30k"], CORPORA["multi30k"].read(synthetic_data_dir)
    )
    assert loaded.metrics.model_dump(mode="json", exclude_none=True, exclude={"version", "train"}) == expected
    assert not list(tmp_path.glob(".*"))  # the staging folder is gone


def test_store_half_refuses_numbers_it_cannot_remeasure(tmp_path, trained, synthetic_data_dir, capsys):
    _, source, _ = trained
    analysed = shutil.copytree(source, tmp_path / "analysed")
    (analysed / "memory_analysis.json").write_text("{}")
    assert main(["store-half", str(analysed), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 2
    assert "memory_analysis.json" in capsys.readouterr().err

    extra = shutil.copytree(source, tmp_path / "extra")
    metrics = json.loads((extra / "metrics.json").read_text())
    metrics["bleu"]["test_2017_flickr"] = 1.0  # a split the training code does not score
    (extra / "metrics.json").write_text(json.dumps(metrics))
    files = {name: (extra / name).read_bytes() for name in FILES}
    assert main(["store-half", str(extra), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 2
    assert "bleu.test_2017_flickr" in capsys.readouterr().err
    assert {name: (extra / name).read_bytes() for name in FILES} == files  # left as it was
    assert not list(tmp_path.glob(".*"))


def test_quick_run_trains_and_evaluates_on_the_first_pairs(tmp_path, synthetic_data_dir, capsys):
    values = make_tiny_config("tiny_quick", epochs=1, threads=1).to_dict()
    values["data"].update(max_pairs=64, max_eval_pairs=5)
    threads = torch.get_num_threads()
    try:
        folder = run_training(
            config_from_dict(values), synthetic_data_dir, tmp_path / "quick", tmp_path / "run", device="cpu"
        )
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
    progress = capsys.readouterr().err  # a bar per phase, with the sentences or steps done and left
    for bar in (
        "epoch 1/1: 100%",
        "val BLEU: 100%",
        "BLEU val: 100%",
        "BLEU test_2016_flickr: 100%",
        "lesion sweep: 100%",
    ):
        assert bar in progress, bar
    assert "5/5 [" in progress and "4/4 [" in progress
    loaded = load_checkpoint(folder, "cpu")
    assert loaded.metrics.train is not None and loaded.metrics.train["steps"] == 64 // 16
    assert loaded.record.training_data.endswith("train (64 pairs)") and loaded.record.max_eval_pairs == 5
    assert "evaluated on the first 5 pairs of each held-out split" in loaded.record.description
    first = {
        split: pairs[:5] for split, pairs in CORPORA["multi30k"].read(synthetic_data_dir).items() if split != "train"
    }
    assert loaded.metrics.bleu == score_splits(loaded.model, loaded.tokenizer, first)["bleu"]
    assert remeasure(loaded, synthetic_data_dir)["bleu"] == loaded.metrics.bleu  # store-half re-measures the same
