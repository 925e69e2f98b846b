"""The device batch: configs trained side by side until a deadline, finished runs packed for the trip back."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.training.conftest import make_tiny_config
from training.cli import main
from training.loop import device_batch
from training.loop.device_batch import BatchError, Job, epochs_done, job_commands, pack_groups, pack_stopped, parse_job
from training.loop.translation_run import run_training


@pytest.fixture
def tiny_config_file(tmp_path):
    path = tmp_path / "tiny_batch.json"
    path.write_text(json.dumps(make_tiny_config("tiny_batch").to_dict()))
    return path


def test_a_job_is_a_config_with_an_optional_seed(tiny_config_file):
    assert parse_job(str(tiny_config_file)) == Job(tiny_config_file, None)
    assert parse_job(f"{tiny_config_file}@3").name == "tiny_batch_seed3"
    with pytest.raises(BatchError, match="no config file"):
        parse_job("training/configs/nothing_here.json")
    for seed in ("0", "x", "-1"):
        with pytest.raises(BatchError, match="positive integer"):
            parse_job(f"{tiny_config_file}@{seed}")


def test_a_shipped_run_is_stored_in_float16_and_a_seed_run_keeps_only_its_outputs(tiny_config_file, tmp_path):
    shipped = job_commands(Job(tiny_config_file, None), tmp_path, ["--device", "cuda"])
    assert [command[3] for command in shipped] == ["train", "store-half", "outputs"]
    assert all(command[:3] == [sys.executable, "-m", "training"] and command[-2:] == ["--device", "cuda"]
               for command in shipped)  # fmt: skip
    assert shipped[0][shipped[0].index("--out") + 1] == str(tmp_path / "out" / "tiny_batch")
    seeded = job_commands(Job(tiny_config_file, 2), tmp_path, [])
    assert [command[3] for command in seeded] == ["train", "outputs"]
    assert seeded[0][seeded[0].index("--seed") + 1] == "2"
    assert seeded[1][4] == str(tmp_path / "out" / "tiny_batch_seed2")


def test_folders_are_grouped_under_the_limit_and_what_cannot_fit_is_left_out():
    sizes = {"a": 6, "b": 5, "c": 9, "d": 11, "e": 3}
    assert pack_groups(sizes, limit=10, archives=5) == ([["a"], ["b"], ["c"], ["e"]], ["d"])
    assert pack_groups({"a": 4, "b": 5, "c": 2}, limit=10, archives=5) == ([["a", "b"], ["c"]], [])
    assert pack_groups(sizes, limit=10, archives=2) == ([["a"], ["b", "e"]], ["c", "d"])  # e still fits beside b


def test_epochs_done_are_read_from_the_training_log(tmp_path):
    log = tmp_path / "job.log"
    assert epochs_done(log) == 0
    log.write_text("vocabulary of 60\nstep 100: loss 3.2\nepoch 1: train loss 3.1, val loss 3.0\nstep 200: loss 2.9\n")
    assert epochs_done(log) == 1


def members(archive) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_batch_trains_side_by_side_and_packs_float16_checkpoints(tiny_config_file, tmp_path, synthetic_data_dir):
    work, pack = tmp_path / "work", tmp_path / "pack"
    jobs = [str(tiny_config_file), f"{tiny_config_file}@2"]
    options = ["--data-dir", str(synthetic_data_dir), "--device", "cpu", "--work", str(work), "--pack", str(pack)]
    assert main(["batch", *jobs, *options, "--deadline", "600", "--archive-mb", "1"]) == 0

    report = json.loads((work / "logs" / "batch.json").read_text())
    assert {name: (run["status"], run["packed"]) for name, run in report.items()} == {
        "tiny_batch": (0, "checkpoint"),
        "tiny_batch_seed2": (0, "checkpoint"),
    }
    assert all(run["epochs_done"] == 3 for run in report.values())  # the config's 3 epochs
    archives = sorted(pack.glob("checkpoints_*.tar"))
    assert archives and all(archive.stat().st_size <= 1_000_000 for archive in archives)
    packed = {name: data for archive in archives for name, data in members(archive).items()}
    shipped = {name.split("/")[1] for name in packed if name.startswith("tiny_batch/")}
    assert {"model.safetensors", "tokenizer.json", "config.json", "metrics.json", "outputs.json.gz"} <= shipped
    weights = tmp_path / "weights.safetensors"
    weights.write_bytes(packed["tiny_batch/model.safetensors"])
    assert {str(tensor.dtype) for tensor in load_file(weights).values()} == {"torch.float16"}
    seeded = {name.split("/")[1] for name in packed if name.startswith("tiny_batch_seed2/")}
    assert {"config.json", "metrics.json", "outputs.json.gz"} <= seeded
    assert not seeded & {"model.safetensors", "tokenizer.json"}
    assert json.loads(packed["tiny_batch_seed2/config.json"])["meta"]["seed"] == 2
    assert "logs/batch.json" in members(pack / "records.tar.gz")


def test_runs_going_at_the_deadline_are_stopped_their_state_packed(tiny_config_file, tmp_path, synthetic_data_dir):
    work, pack = tmp_path / "work", tmp_path / "pack"
    options = ["--data-dir", str(synthetic_data_dir), "--device", "cpu", "--work", str(work), "--pack", str(pack)]
    assert main(["batch", str(tiny_config_file), *options, "--deadline", "0.5"]) == 0
    report = json.loads((work / "logs" / "batch.json").read_text())
    assert report["tiny_batch"]["status"] == "stopped at the deadline"
    saved = (work / "runs" / "tiny_batch" / "state.pt").exists()  # whether it got as far as its first save
    assert report["tiny_batch"]["packed"] == ("state" if saved else "nothing: stopped before its first saved state")
    assert bool(list(pack.glob("resume_tiny_batch.tar.*"))) is saved
    assert not list(pack.glob("checkpoints_*.tar"))
    assert "logs/tiny_batch.log" in members(pack / "records.tar.gz")


def test_a_stopped_run_travels_in_pieces_that_join_into_a_folder_it_resumes_from(tmp_path, synthetic_data_dir):
    config, runs, pack = make_tiny_config("tiny_batch"), tmp_path / "work" / "runs", tmp_path / "pack"
    run_training(config, synthetic_data_dir, tmp_path / "out", runs / "tiny_batch", device="cpu", max_steps=20)
    (runs / "tiny_batch" / "state.pt.partial").write_bytes(b"a save cut short by the deadline")
    (runs / "never_saved").mkdir()  # stopped before its first state: nothing to resume
    pack.mkdir()
    limit = (runs / "tiny_batch" / "state.pt").stat().st_size // 3
    assert pack_stopped(["never_saved", "tiny_batch"], runs, pack, limit, pieces_left=7) == {
        "never_saved": "nothing: stopped before its first saved state",
        "tiny_batch": "state",
    }
    pieces = sorted(pack.iterdir())
    assert [piece.name for piece in pieces] == [f"resume_tiny_batch.tar.{i:03d}" for i in range(len(pieces))]
    assert len(pieces) > 3 and all(piece.stat().st_size <= limit for piece in pieces)
    assert not list(runs.glob("*.tar"))  # the whole tar is not left behind in the work folder
    one_short = tmp_path / "one_short"
    one_short.mkdir()
    refused = pack_stopped(["tiny_batch"], runs, one_short, limit, pieces_left=len(pieces) - 1)
    assert refused == {"tiny_batch": f"nothing: its {len(pieces)} pieces outnumber the {len(pieces) - 1} archives left"}
    assert not list(one_short.iterdir()) and not list(runs.glob("*.tar"))

    joined, back = tmp_path / "joined.tar", tmp_path / "back"
    joined.write_bytes(b"".join(piece.read_bytes() for piece in pieces))
    with tarfile.open(joined) as tar:
        tar.extractall(back, filter="data")
    assert sorted(f.name for f in (back / "tiny_batch").iterdir()) == sorted(
        f.name for f in (runs / "tiny_batch").iterdir() if f.name != "state.pt.partial"
    )
    folder = run_training(config, synthetic_data_dir, tmp_path / "resumed", back / "tiny_batch", device="cpu")
    log = (back / "tiny_batch" / "train.log").read_text()
    assert "resume at step 20: 1 epochs done, 4 batches into the next" in log
    assert json.loads((folder / "metrics.json").read_text())["train"]["steps"] == 48  # the whole 3 epochs


def test_stopped_runs_get_the_archives_the_checkpoints_left_most_epochs_first(tmp_path, monkeypatch):
    """The packing after the deadline, given how the runs ended: two finished, two stopped."""
    work, pack, limit = tmp_path / "work", tmp_path / "pack", 100_000
    for name, size in (("done", 50_000), ("big", 95_000)):  # big: under the limit, but not with the tar's own bytes
        (work / "out" / name).mkdir(parents=True)
        (work / "out" / name / "model.safetensors").write_bytes(b"w" * size)
    for name, epochs in (("near", 15), ("early", 3)):
        (work / "runs" / name).mkdir(parents=True)
        (work / "runs" / name / "state.pt").write_bytes(b"s" * 300_000)  # with its log: 4 pieces each
        log = "".join(f"epoch {e}: train loss 2.0\n" for e in range(1, epochs + 1))
        (work / "runs" / name / "train.log").write_text(log)
    jobs = [Job(Path(f"{name}.json"), None) for name in ("early", "done", "big", "near")]
    exited = dict.fromkeys(["done", "big"], subprocess.CompletedProcess([], returncode=0))  # how the runs ended
    monkeypatch.setattr(device_batch, "launch", lambda jobs, work, options, logs: exited)
    monkeypatch.setattr(device_batch, "wait_or_stop", lambda running, deadline_s: {"done": 12.0, "big": 13.0})
    report = device_batch.run_batch(jobs, work, pack, 60, [], limit, archives=5)
    assert {name: (run["epochs_done"], run["packed"]) for name, run in report.items()} == {
        "early": (3, "nothing: no archive left"),
        "done": (0, "checkpoint"),
        "big": (0, "nothing: larger than one archive, or no archive left"),
        "near": (15, "state"),  # the most epochs done: first, into the 4 archives the checkpoint left
    }
    assert sorted(f.name for f in pack.iterdir()) == ["checkpoints_0.tar", "records.tar.gz"] + [
        f"resume_near.tar.00{i}" for i in range(4)
    ]
    assert all(f.stat().st_size <= limit for f in pack.iterdir())


def test_bad_batch_arguments_are_refused_in_one_line(tiny_config_file, tmp_path, capsys):
    common = ["--pack", str(tmp_path / "pack"), "--work", str(tmp_path / "work")]
    assert main(["batch", "training/configs/nothing_here.json", "--deadline", "10", *common]) == 2
    assert "no config file" in capsys.readouterr().err
    assert main(["batch", str(tiny_config_file), str(tiny_config_file), "--deadline", "10", *common]) == 2
    assert "named twice" in capsys.readouterr().err
    for bad in (["--deadline", "0"], ["--deadline", "inf"], ["--deadline", "10", "--archive-mb", "nan"],
                ["--deadline", "10", "--archives", "0"]):  # fmt: skip
        with pytest.raises(SystemExit):
            main(["batch", str(tiny_config_file), *bad, *common])
    assert main(["batch", str(tiny_config_file), "--deadline", "10", "--archive-mb", "0.09", *common]) == 2
    assert "--archive-mb must be at least 0.1" in capsys.readouterr().err
