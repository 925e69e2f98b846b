"""Training a segment-recurrent decoder on a task: the checkpoint loads like
any other, its recorded test score is what the loaded weights score, and a
rerun resumes instead of starting over."""

from __future__ import annotations

import json

import pytest
import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.tracing import run_with_trace
from training.loop.segment_task_run import TaskRun, scores, train_task
from training.report.metrics_files import chosen_step
from training.tasks.rmt_tasks import task_split, text


def small(**changes) -> TaskRun:
    return TaskRun(**{"task": "reverse", "segments": 3, "carry": "rmt", "seed": 1, "steps": 6, "batch_size": 4,
                      "memory": 2, "d_model": 16, "d_ff": 32, "n_heads": 2, "eval_every": 3} | changes)  # fmt: skip


def test_a_trained_task_model_loads_scores_as_recorded_and_traces_by_segment(tmp_path):
    run = small()
    metrics = train_task(run, tmp_path / "out", tmp_path / "run", log=lambda line: None)
    loaded = load_checkpoint(tmp_path / "out", "cpu")
    assert loaded.config.segment_length == 17 and loaded.config.memory_size == 2  # 49 tokens in 3 segments
    test = task_split("reverse", "test", 1000)
    assert scores(loaded.model, test) == metrics["test"]
    assert [step for step, _, _ in metrics["curve"]] == [3, 6] and metrics["seed"] == 1
    stream = text(test[0].stream)
    assert loaded.tokenizer.encode(stream) == list(test[0].stream)  # the stream as a person types it
    trace = run_with_trace(loaded, stream, names=["memory.write"])
    assert [call.index["segment"] for call in trace.captures["memory.write"].calls] == [0, 1, 2]
    recorded = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert (recorded["memory_setup"], recorded["memory"]) == ("RMT, 2 memory tokens", 2)
    assert run.name == "reverse_3seg_rmt2_6steps_seed1"  # the memory named where it is not the default 8
    assert small(memory=8, carry="xl").name == "reverse_3seg_xl_6steps_seed1"


def test_a_rerun_resumes_and_another_run_in_the_same_folder_is_refused(tmp_path):
    lines = []
    train_task(small(steps=3), tmp_path / "a", tmp_path / "run", log=lines.append)
    with pytest.raises(ValueError, match="another run"):
        train_task(small(steps=3, carry="xl"), tmp_path / "b", tmp_path / "run", log=lines.append)
    train_task(small(steps=3), tmp_path / "c", tmp_path / "run", log=lines.append)
    assert any(line.startswith("resumed") for line in lines)
    first = load_checkpoint(tmp_path / "a", "cpu").model.state_dict()
    again = load_checkpoint(tmp_path / "c", "cpu").model.state_dict()
    assert all(torch.equal(first[name], again[name]) for name in first)


def test_a_step_chosen_in_the_last_tenth_of_training_is_marked_with_what_that_tenth_gained():
    curve = [[2700, 0.5, 0.90], [5400, 0.2, 0.97], [5700, 0.1, 0.99], [6000, 0.1, 0.98]]  # [step, loss, val]

    def chosen(best_step: int) -> str:
        return chosen_step({"best_step": best_step, "steps": 6000, "curve": curve})

    assert chosen(5400) == "5400"  # 90% exactly: not in the last tenth
    assert chosen(5700) == "5700 (last 10%, validation +0.0200)"  # best after 5,400 (0.99) - best up to it (0.97)
    assert chosen(300) == "300"
    plateau = [[5000, 0.1, 1.0], [6000, 0.1, 1.0]]
    assert chosen_step({"best_step": 6000, "steps": 6000, "curve": plateau}) == "6000 (last 10%, validation +0.0000)"
