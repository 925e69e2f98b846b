"""What the memory holds (paper 002, Figure 6 as a measurement): linear probes
that read the symbol at each source position from the RMT memory after each
segment.

The model reads generated samples of its own task (the checkpoint's
record's task); `memory.write` is captured at every segment. For every segment
k, memory slot j and source position i, a probe is fit on samples of the
task's "train" split, its L2 strength chosen on the "val" split, and its
accuracy measured on the "test" split (`inference.analyses.memory_probe`).
Labels are the source symbols, numbered in the order of `symbols`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from inference.analyses.memory_probe import STEPS, Labelled, probe_accuracy
from inference.core.capabilities import Capability
from inference.core.family import LoadedModel, capabilities_of
from inference.core.hook_names import MEMORY_WRITE
from inference.core.interventions import NO_INTERVENTIONS
from inference.core.segment_memory import segment_config
from inference.core.tracing import recording
from training.tasks.rmt_tasks import TOKENS, Sample, task_of, task_split

MAX_TRAIN, MAX_HELD_OUT, MAX_STEPS = 4000, 2000, 1000  # bounds of one probe run
BATCH_SIZE = 256


@dataclass(frozen=True)
class MemoryProbe:
    """Held-out accuracy of reading source symbols from the memory after each segment."""

    checkpoint: str
    task: str
    segment_length: int  # tokens per segment
    source_segment: np.ndarray  # [position] the segment that reads source position i
    symbols: tuple[str, ...]  # the labels' symbols: label c is symbols[c]
    per_slot: np.ndarray  # [segment, slot, position] a probe reading slot j of the memory after segment k
    all_slots: np.ndarray  # [segment, position] a probe reading every slot of the memory after segment k
    chance: np.ndarray  # [position] always answering the train split's most frequent symbol at i
    samples: dict[str, int]  # samples per split: train (fit), val (L2 choice), test (scored)

    @property
    def best_slot(self) -> np.ndarray:  # [segment, position]
        """The best single slot's accuracy for every position after every segment."""
        return self.per_slot.max(1)


def probe_memory(
    loaded: LoadedModel, train: int = 2000, validation: int = 500, test: int = 500, steps: int = STEPS
) -> MemoryProbe:
    """Probe the memory of a task checkpoint with memory tokens (module doc); raises ValueError."""
    if Capability.SEGMENTS not in capabilities_of(loaded.config):
        raise ValueError(f"{loaded.name} reads no segments: it carries no memory from one to the next to probe")
    if not loaded.config.memory_size:
        raise ValueError(f"{loaded.name} has no memory tokens to probe")
    segment_length = segment_config(loaded.config).segment_length
    task = task_of(loaded.name, loaded.record.task)
    if not (2 <= train <= MAX_TRAIN and 1 <= validation <= MAX_HELD_OUT and 1 <= test <= MAX_HELD_OUT):
        raise ValueError(f"train 2-{MAX_TRAIN} samples, validation and test 1-{MAX_HELD_OUT} each")
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps 1-{MAX_STEPS}")
    test_samples = task_split(task, "test", test)
    val_samples = task_split(task, "val", validation)
    train_samples = task_split(task, "train", train, exclude=frozenset(test_samples) | frozenset(val_samples))
    parts = [train_samples, val_samples, test_samples]
    sources = [torch.tensor([s.source for s in part]) for part in parts]  # [n, positions] token ids each
    if len({part.shape[1] for part in sources}) != 1:
        raise ValueError(f"the {task} task's sources differ in length; positions cannot be probed")
    symbol_ids, labels = torch.unique(torch.cat(sources), return_inverse=True)
    labels = labels.split([len(part) for part in parts])  # [n, positions] each
    memories = [memory_after_each_segment(loaded.model, part) for part in parts]  # [segment, n, slot, d] each
    results = []
    for k in range(memories[0].shape[0]):  # the memory after segment k
        fit, choose, score = (Labelled(memory[k], part_labels) for memory, part_labels in zip(memories, labels))
        results.append(probe_accuracy(fit, choose, score, steps=steps))
    positions = sources[0].shape[1]
    return MemoryProbe(
        checkpoint=loaded.name,
        task=task,
        segment_length=segment_length,
        source_segment=np.arange(positions) // segment_length,
        symbols=tuple(TOKENS[i] for i in symbol_ids.tolist()),
        per_slot=np.stack([r.per_slot for r in results]),
        all_slots=np.stack([r.all_slots for r in results]),
        chance=results[0].chance,
        samples={"train": train, "val": validation, "test": test},
    )


def memory_after_each_segment(model: torch.nn.Module, samples: list[Sample]) -> torch.Tensor:
    """The model reads the samples' streams -> memory.write of every segment [segment, n, slot, d]."""
    if len({len(s.stream) for s in samples}) != 1:
        raise ValueError("the samples' streams differ in length")
    batches = []
    for first in range(0, len(samples), BATCH_SIZE):
        ids = torch.tensor([s.stream for s in samples[first : first + BATCH_SIZE]])  # [b, n]
        with recording(model, [MEMORY_WRITE], NO_INTERVENTIONS) as (captures, _):
            model(ids)
        written, _ = captures[MEMORY_WRITE].stacked()  # [segment, b, slot, d]
        batches.append(written)
    return torch.cat(batches, dim=1)


def probe_record(probe: MemoryProbe, seconds: float) -> dict:
    """The probe as metrics.json keeps it (`python -m training memory-probe`), for the Segments page."""
    return {
        "task": probe.task,
        "segment_length": probe.segment_length,
        "symbols": list(probe.symbols),
        "per_slot": np.round(probe.per_slot, 4).tolist(),  # [segment][slot][position]
        "all_slots": np.round(probe.all_slots, 4).tolist(),  # [segment][position]
        "chance": np.round(probe.chance, 4).tolist(),  # [position]
        "samples": probe.samples,
        "seconds": round(seconds, 1),
    }
