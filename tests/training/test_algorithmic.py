"""Paper 001's algorithmic tasks: the generators' samples are right, the
curriculum moves on its stated rule, and a tiny run trains, tests by length
and writes a checkpoint the registry serves."""

from __future__ import annotations

import json
import random

import pytest
import torch

from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointRegistry, load_checkpoint
from inference.core.family import build_model, capabilities_of, config_from_dict
from training.loop.neural_gpu_task_run import (
    AlgorithmicRun,
    Curriculum,
    NeuralGPUTask,
    accuracy,
    length_table,
    task_tokenizer,
    train_algorithmic,
)
from training.report.active_memory import aids_table, algorithmic_table
from training.tasks.neural_gpu_tasks import Sample, carry_chain_sample, sample, task_split


def number(bits: str) -> int:
    """Least significant bit first."""
    return sum(int(bit) << i for i, bit in enumerate(bits))


@pytest.mark.parametrize("length", [1, 5, 17])
def test_additions_add(length):
    rng = random.Random(length)
    for _ in range(50):
        s = sample("addition", length, rng)
        a, b = s.source.split("+")
        assert len(a) == len(b) == length and len(s.target) == length + 1
        assert number(s.target) == number(a) + number(b)


def test_reverse_and_duplicate():
    rng = random.Random(0)
    s = sample("reverse", 9, rng)
    assert len(s.source) == 9 and s.target == s.source[::-1]
    s = sample("duplicate", 6, rng)
    assert s.target == s.source * 2


@pytest.mark.parametrize("length", [4, 8, 40])
def test_carry_chains_carry_through_most_bits(length):
    rng = random.Random(length)
    for _ in range(20):
        s = carry_chain_sample(length, rng)
        a, b = (number(x) for x in s.source.split("+"))
        assert number(s.target) == a + b
        # the carry out of the top bit: every bit from b's one up is a one in a, so the sum reaches 2^length
        assert a + b >= 2**length
        start = b.bit_length() - 1
        assert length - start >= 3 * length / 4


def test_splits_are_fixed_and_differ():
    assert task_split("addition", "test", 8, 5) == task_split("addition", "test", 8, 5)
    assert task_split("addition", "test", 8, 5) != task_split("addition", "val", 8, 5)


class WritesGivenOutputs(torch.nn.Module):
    """A model whose greedy outputs are fixed strings, to score by hand."""

    def __init__(self, outputs: list[str]):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))  # where accuracy() reads the device
        self.outputs = outputs

    def greedy(self, src_ids: torch.Tensor, max_new_tokens: int) -> tuple[torch.Tensor, None]:
        tokenizer = task_tokenizer()
        rows = [[*tokenizer.encode_batch([output])[0], tokenizer.eos_id] for output in self.outputs]
        width = max(map(len, rows))
        return torch.tensor([row + [tokenizer.pad_id] * (width - len(row)) for row in rows]), None


def test_accuracy_scores_each_sample_whole_and_bit_by_bit():
    samples = [Sample("0110", "0110"), Sample("1011", "1101"), Sample("1100", "0011")]
    # right; one bit wrong; a bit short (the missing bit counts wrong, as does its last written one)
    scored = accuracy(WritesGivenOutputs(["0110", "1001", "00"]), samples, task_tokenizer())
    assert scored["sample_whole"] == [1, 0, 0]
    assert scored["sample_bit_hits"] == [4, 3, 2]
    assert scored["sequence"] == pytest.approx(1 / 3)
    assert scored["bit"] == pytest.approx(9 / 12)


def test_curriculum_advances_only_at_its_threshold_and_stops_at_the_longest_length():
    curriculum = Curriculum(level=2, max_length=3, advance_at=0.9)
    assert not curriculum.update(0.89) and curriculum.level == 2
    assert curriculum.update(0.9) and curriculum.level == 3
    assert not curriculum.update(1.0) and curriculum.level == 3
    rng = random.Random(0)
    lengths = [curriculum.length(rng) for _ in range(2000)]
    assert set(lengths) <= {1, 2, 3} and 0.75 < lengths.count(3) / 2000 < 0.9


@pytest.mark.parametrize("model", ["neural_gpu", "gru_attention"])
def test_a_tiny_run_trains_tests_by_length_and_is_served(tmp_path, model):
    run = AlgorithmicRun("reverse", model, seed=1, steps=60, max_length=3, maps=8, check_every=20, eval_every=30)
    out = tmp_path / "checkpoints" / "algorithmic" / run.name
    metrics = train_algorithmic(run, out, tmp_path / "run", log=lambda line: None)
    assert [row["length"] for row in metrics["test"]] == [3, 6, 15, 30]
    assert all(0.0 <= row["bit"] <= 1.0 for row in metrics["test"])
    assert metrics["best_step"] in (30, 60)
    assert json.loads((out / "metrics.json").read_text())["test"] == metrics["test"]
    registry = CheckpointRegistry(tmp_path / "checkpoints" / "algorithmic", device="cpu")
    loaded = registry.get(run.name)
    assert Capability.TRANSLATES in capabilities_of(loaded.config)
    resumed = train_algorithmic(run, out, tmp_path / "run", log=lambda line: None)  # finished: nothing more to train
    assert resumed["test"] == metrics["test"]


def test_the_relaxation_pull_adds_its_weight_times_the_sets_distance_to_the_loss():
    run = AlgorithmicRun("addition", "neural_gpu", seed=1, max_length=3, maps=8, dropout=0.0, relaxed_sets=3)
    tokenizer = task_tokenizer()
    model = build_model(config_from_dict(run.model_config(tokenizer)))
    assert model.relaxation_distance().item() < 1e-12  # the sets start shared
    with torch.no_grad():
        for weight in model.encoder.relaxed.parameters():
            weight.add_(0.1 * torch.randn_like(weight))  # as training draws them apart
    task = NeuralGPUTask(run, model, tokenizer, log=lambda line: None)
    task.pull = 0.0
    plain, _ = task.loss(7, range(run.batch_size))
    task.pull = 0.5
    pulled, _ = task.loss(7, range(run.batch_size))  # step 7's batch again
    distance = model.relaxation_distance().item()
    assert distance > 0.1
    assert pulled.item() - plain.item() == pytest.approx(0.5 * distance, rel=1e-4)
    with pytest.raises(ValueError, match="the gru_attention model.s recurrence cannot be relaxed"):
        AlgorithmicRun("addition", "gru_attention", seed=1, relaxed_sets=2)


def test_a_relaxed_run_ships_one_shared_set_and_tests_what_it_ships(tmp_path):
    run = AlgorithmicRun("reverse", "neural_gpu", seed=1, steps=40, max_length=3, maps=8, check_every=10,
                         eval_every=20, relaxed_sets=3, pull=0.01)  # fmt: skip
    assert run.name == "reverse_neural_gpu_len3_relaxed3_40steps_seed1"
    out = tmp_path / "checkpoint"
    metrics = train_algorithmic(run, out, tmp_path / "run", log=lambda line: None)
    loaded = load_checkpoint(out, "cpu")
    assert loaded.config.relaxed_sets == 1
    assert not [name for name in loaded.model.state_dict() if ".relaxed." in name]
    assert length_table(loaded.model, "reverse", 3, loaded.tokenizer) == metrics["test"]
    # The pull grew by 1.2 at every check (each 10 steps) taken at the longest length, 3.
    reached = next((step for step, level in metrics["curriculum"] if level == 3), None)
    growths = 0 if reached is None else (run.steps - reached) // run.check_every
    assert metrics["final_pull"] == pytest.approx(0.01 * 1.2**growths)
    assert metrics["sets_apart"] > 0


def test_the_table_lists_served_runs_and_the_collection_and_nothing_else(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    served = AlgorithmicRun("reverse", "neural_gpu", seed=1, steps=20, max_length=3, maps=8, check_every=20)
    collected = AlgorithmicRun("reverse", "gru_attention", seed=2, steps=20, max_length=4, maps=8, check_every=20)
    train_algorithmic(served, checkpoints / "neural_gpu_reverse", tmp_path / "a", log=lambda line: None)
    train_algorithmic(collected, checkpoints / "algorithmic" / collected.name, tmp_path / "b", log=lambda line: None)
    (checkpoints / "transformer").mkdir()
    (checkpoints / "transformer" / "metrics.json").write_text(json.dumps({"bleu": {"val": 1.0}}))
    rows = [line for line in algorithmic_table(checkpoints) if line.startswith("| reverse |")]
    assert [row.split(" | ")[1:4] for row in rows] == [["gru_attention", "2", "4"], ["neural_gpu", "1", "3"]]


def neural_gpu_run(task: str, seed: int, max_length: int, relaxed_sets: int, sequence: list[float],
                   steps: int = 100) -> dict:  # fmt: skip
    """A run's metrics as the report reads them: 4 test samples per length, no per-sample record."""
    test = [{"factor": f, "length": f * max_length, "sequence": s, "bit": 0.5} for f, s in zip((1, 2), sequence)]
    training = {"max_length": max_length, "relaxed_sets": relaxed_sets}
    return {"task": task, "model": "neural_gpu", "seed": seed, "steps": steps, "test": test, "test_samples": 4,
            "training": training}  # fmt: skip


def test_the_aids_table_sets_relaxed_runs_pooled_over_seeds_against_each_setting_without():
    runs = [
        neural_gpu_run("reverse", 1, 20, 6, [1.0, 0.5]),
        neural_gpu_run("reverse", 2, 20, 6, [1.0, 0.25]),
        neural_gpu_run("reverse", 1, 8, 1, [1.0, 0.0]),
        neural_gpu_run("reverse", 1, 8, 1, [0.5, 0.0], steps=400),  # trained longer: a row of its own
        neural_gpu_run("addition", 1, 8, 1, [1.0, 0.0]),  # no relaxed addition run: no row
    ]
    rows = [line.strip("| ").split(" | ") for line in aids_table(runs) if line.startswith("| reverse")]
    assert not [line for line in aids_table(runs) if line.startswith("| addition")]
    assert [row[1:3] for row in rows] == [
        ["20, 100 steps; seeds 1, 2", "8, 100 steps; seeds 1"],
        ["20, 100 steps; seeds 1, 2", "8, 400 steps; seeds 1"],
    ]
    # 1x: 8 of 8 pooled samples right against 4 of 4, then against 2 of 4; 2x: 3 of 8 right against none of 4
    assert rows[0][3] == "+0.00 [+0.00, +0.00]" and rows[1][3].startswith("+0.50 [")
    assert rows[0][4].startswith("+0.38 [") and rows[1][4].startswith("+0.38 [")
