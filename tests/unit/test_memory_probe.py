"""Linear probes of memory: they read what is linearly written, find nothing
in noise, and run end to end on a segment model's memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from inference.analyses.memory_probe import Labelled, probe_accuracy
from inference.core.family import LoadedModel, build_model, config_from_dict
from inference.core.model_record import ModelRecord
from tests.conftest import tiny_config
from training.studies.memory_probe import probe_memory
from training.tasks.rmt_tasks import TOKENS

SLOTS, WIDTH, POSITIONS, CLASSES = 3, 8, 4, 5


def part(n: int, seed: int, written: bool) -> Labelled:
    """Labels [n, positions]; slot j holds position j's label as a fixed direction per class
    (when `written`), plus noise; position 3 is in no slot."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, CLASSES, (n, POSITIONS), generator=generator)
    features = torch.randn(n, SLOTS, WIDTH, generator=generator)  # [n, slots, d]
    if written:
        directions = torch.randn(SLOTS, CLASSES, WIDTH, generator=torch.Generator().manual_seed(99)) * 3
        for slot in range(SLOTS):
            features[:, slot] += directions[slot][labels[:, slot]]
    return Labelled(features, labels)


def test_a_probe_reads_labels_written_linearly_and_only_from_the_slot_holding_them():
    accuracy = probe_accuracy(part(400, 0, True), part(200, 1, True), part(200, 2, True), steps=60)
    assert accuracy.per_slot.shape == (SLOTS, POSITIONS) and accuracy.all_slots.shape == (POSITIONS,)
    for slot in range(SLOTS):
        assert accuracy.per_slot[slot, slot] > 0.95  # its own position
        others = [p for p in range(POSITIONS) if p != slot]
        assert accuracy.per_slot[slot, others].max() < 0.4  # chance is about 0.2
    assert (accuracy.all_slots[:SLOTS] > 0.95).all() and accuracy.all_slots[SLOTS] < 0.4
    assert set(accuracy.l2_per_slot.flatten()) <= {1e-1, 1e-2, 1e-3}


def test_a_probe_of_noise_is_near_chance():
    accuracy = probe_accuracy(part(400, 0, False), part(200, 1, False), part(400, 2, False), steps=60)
    assert np.abs(accuracy.per_slot - 1 / CLASSES).max() < 0.1
    assert np.abs(accuracy.all_slots - 1 / CLASSES).max() < 0.1
    assert np.abs(accuracy.chance - 1 / CLASSES).max() < 0.1


def test_chance_is_the_train_parts_most_frequent_label_on_test():
    features = torch.zeros(4, 1, 2)
    train = Labelled(features, torch.tensor([[1], [1], [1], [0]]))
    test = Labelled(features, torch.tensor([[1], [0], [0], [0]]))
    assert probe_accuracy(train, train, test, steps=1).chance.tolist() == [0.25]


def test_flat_features_are_one_slot_and_bad_shapes_are_refused():
    flat = Labelled(torch.randn(30, WIDTH), torch.randint(0, 2, (30, 2)))
    assert probe_accuracy(flat, flat, flat, steps=5).per_slot.shape == (1, 2)
    with pytest.raises(ValueError, match="labels are"):
        Labelled(torch.randn(30, WIDTH), torch.zeros(29, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="same slots"):
        probe_accuracy(flat, flat, Labelled(torch.randn(30, 3, WIDTH), torch.zeros(30, 2, dtype=torch.long)))
    with pytest.raises(ValueError, match="at least two samples"):
        probe_accuracy(Labelled(torch.randn(1, WIDTH), torch.zeros(1, 2, dtype=torch.long)), flat, flat)


def task_model(memory_size: int) -> LoadedModel:
    torch.manual_seed(0)
    config = config_from_dict(
        {"family": "recurrent_memory", "vocab_size": len(TOKENS), "d_model": 16, "d_ff": 32, "n_heads": 2,
         "n_layers": 1, "segment_length": 10, "memory_size": memory_size, "bptt_depth": -1}
    )  # fmt: skip
    return LoadedModel("tiny", build_model(config).eval(), None, record=ModelRecord(task="reverse"))


def test_a_memory_probe_of_an_untrained_model_runs_end_to_end():
    probe = probe_memory(task_model(memory_size=3), train=60, validation=20, test=30, steps=5)
    segments = 5  # reverse: 24 + 1 + 24 = 49 tokens in segments of 10
    assert probe.task == "reverse" and probe.symbols == tuple("01234567")
    assert probe.per_slot.shape == (segments, 3, 24) and probe.all_slots.shape == (segments, 24)
    assert probe.best_slot.shape == (segments, 24) and probe.chance.shape == (24,)
    assert probe.source_segment.tolist() == [0] * 10 + [1] * 10 + [2] * 4
    assert ((probe.per_slot >= 0) & (probe.per_slot <= 1)).all()
    assert probe.samples == {"train": 60, "val": 20, "test": 30}


def test_a_model_without_memory_or_oversized_work_is_refused(tiny_tokenizer):
    with pytest.raises(ValueError, match="no memory tokens"):
        probe_memory(task_model(memory_size=0))
    memory_slots = build_model(tiny_config("memtransformer", tiny_tokenizer.vocab_size))  # memory, but no segments
    with pytest.raises(ValueError, match="reads no segments"):
        probe_memory(LoadedModel("slots", memory_slots, tiny_tokenizer, record=ModelRecord(task="reverse")))
    with pytest.raises(ValueError, match="train 2-"):
        probe_memory(task_model(memory_size=2), train=10**6)
