"""Paper 001's algorithmic tasks: the generators' samples are right, the
curriculum moves on its stated rule, and a tiny run trains, tests by length
and writes a checkpoint the registry serves."""

from __future__ import annotations

import json
import random

import pytest

from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointRegistry
from inference.core.family import capabilities_of
from training.loop.neural_gpu_task_run import AlgorithmicRun, Curriculum, train_algorithmic
from training.report.active_memory import algorithmic_table
from training.tasks.neural_gpu_tasks import carry_chain_sample, sample, task_split


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
