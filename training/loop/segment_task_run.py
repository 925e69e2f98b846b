"""Train a segment-recurrent decoder (RMT, Transformer-XL or no memory) on
one of paper 002's algorithmic tasks, and write its checkpoint folder.

    python -m training segment-task --task copy --segments 4 --carry rmt --seed 1 --steps 2000

- Data: every step draws a fresh batch from the task's generator (seeded by
  the run's seed and step), never a validation or test sample.
- Loss: cross-entropy of the target characters only (the positions after
  the start-to-generate token), summed over all segments, one backward;
  gradients flow through every memory handoff (`bptt_depth` -1, as the
  paper's code for these tasks), the Transformer-XL cache is detached.
- Model choice on validation only: per-character accuracy on 256 validation
  samples every `eval_every` steps; the best state is kept and the test
  split (1000 samples, fixed seed) is scored once, at the end, on it.
- Metric: per-character accuracy of the target, teacher-forced (the paper's
  measure), and the share of samples with every target character right.
- Stored in float16 where the rounded weights score the test split exactly
  as the trained ones (metrics.json says which).
- Resumable: rerunning the same command continues from its run folder
  (`--run-dir` lets a longer schedule start from a shorter one's state).
- Sizes: segment length = ceil(stream / segments); memory tokens (RMT) and
  cache length (Transformer-XL) are both `--memory`.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from inference.core.checkpoint import cast_copy, save_checkpoint
from inference.core.family import build_model, config_from_dict
from inference.core.tokenizer import character_tokenizer
from training.loop.steps import StepSettings
from training.loop.task_steps import TaskCallbacks, TaskRunFolder, TaskSchedule, train_task_steps
from training.tasks.rmt_tasks import GENERATORS, TOKENS, Sample, task_split, text

CARRIES = ("rmt", "xl", "none")
VALIDATION_SIZE, TEST_SIZE = 256, 1000


@dataclass(frozen=True)
class TaskRun:
    task: str
    segments: int
    carry: str  # rmt: memory tokens; xl: Transformer-XL cache; none: each segment alone
    seed: int
    steps: int = 2000
    batch_size: int = 32
    learning_rate: float = 1e-3
    clip: float = 0.25  # the paper's gradient clipping
    memory: int = 8  # memory tokens or cache length
    d_model: int = 64
    d_ff: int = 256
    n_heads: int = 4
    n_layers: int = 2
    eval_every: int = 100

    def __post_init__(self):
        if self.carry not in CARRIES:
            raise ValueError(f"carry is one of {', '.join(CARRIES)}, got {self.carry!r}")
        if not 1 <= self.segments <= 64 or self.steps < 1 or self.memory < 1:
            raise ValueError("segments 1-64, steps and memory at least 1")

    @property
    def name(self) -> str:
        return f"{self.task}_{self.segments}seg_{self.carry}_{self.steps}steps_seed{self.seed}"

    @property
    def data_seed(self) -> str:
        """Seeds the training batches: the same stream of samples whatever the schedule's length."""
        return f"{self.task}_{self.segments}seg_{self.carry}_seed{self.seed}"

    def model_config(self, stream_length: int) -> dict:
        return {
            "family": "recurrent_memory",
            "vocab_size": len(TOKENS),
            "d_model": self.d_model,
            "d_ff": self.d_ff,
            "n_heads": self.n_heads,
            "n_layers": self.n_layers,
            "segment_length": math.ceil(stream_length / self.segments),
            "memory_size": self.memory if self.carry == "rmt" else 0,
            "cache_length": self.memory if self.carry == "xl" else 0,
            "bptt_depth": -1,
            "max_positions": max(4096, stream_length),
        }


def variant_line(config) -> str:
    """How the page names the model: its variant and segment length."""
    return f"{config.variant}; segments of {config.segment_length} tokens"


def stream_batch(samples: list[Sample]) -> tuple[torch.Tensor, int]:  # ([b, n], first target index)
    starts = {s.target_start for s in samples}
    if len(starts) != 1 or len({len(s.stream) for s in samples}) != 1:
        raise ValueError("a batch holds samples of one layout")
    return torch.tensor([s.stream for s in samples]), starts.pop()


def target_logits(model, ids: torch.Tensor, start: int) -> torch.Tensor:  # [b, n] -> [b, targets, vocab]
    logits = model(ids)  # [b, n, vocab]
    return logits[:, start - 1 : -1]  # the prediction of every target character


def scores(model, samples: list[Sample], batch_size: int = 128) -> dict[str, float]:
    """Teacher-forced per-character accuracy and whole-answer accuracy."""
    right, total, whole = 0, 0, 0
    with torch.no_grad():
        for first in range(0, len(samples), batch_size):
            ids, start = stream_batch(samples[first : first + batch_size])
            hits = target_logits(model, ids, start).argmax(-1) == ids[:, start:]  # [b, targets]
            right, total, whole = right + int(hits.sum()), total + hits.numel(), whole + int(hits.all(-1).sum())
    return {"char_accuracy": right / total, "answer_accuracy": whole / len(samples)}


def storage_dtype(model, test: list[Sample], measured: dict[str, float]) -> str:
    """float16 where the rounded weights score the test split exactly as the trained ones, else float32."""
    rounded = cast_copy(model, torch.float16).float().eval()
    return "float16" if scores(rounded, test) == measured else "float32"


class SegmentTask(TaskCallbacks):
    """The step loop's callbacks for a segment task run: fresh batches that hold no held-out sample, the loss of
    the target characters, per-character validation accuracy."""

    def __init__(self, run: TaskRun, model, validation: list[Sample], held_out: frozenset[Sample]):
        self.run, self.model, self.validation, self.held_out = run, model, validation, held_out

    def loss(self, step: int) -> torch.Tensor:
        rng = random.Random(f"{self.run.data_seed}/{step}")
        batch = []
        while len(batch) < self.run.batch_size:
            sample = GENERATORS[self.run.task](rng)
            if sample not in self.held_out:
                batch.append(sample)
        ids, start = stream_batch(batch)  # [b, n]
        logits = target_logits(self.model, ids, start)  # [b, targets, vocab]
        return F.cross_entropy(logits.flatten(0, 1), ids[:, start:].flatten())

    def validate(self) -> tuple[float, list[float], str]:
        return scores(self.model, self.validation)["char_accuracy"], [], ""


def train_task(run: TaskRun, out: Path, run_dir: Path, log=print) -> dict:
    """Train (or resume) the run; write the checkpoint folder; return its metrics."""
    torch.manual_seed(run.seed)
    validation = task_split(run.task, "val", VALIDATION_SIZE)
    test = task_split(run.task, "test", TEST_SIZE)
    stream_length = len(test[0].stream)
    model = build_model(config_from_dict(run.model_config(stream_length)))
    optimizer = torch.optim.Adam(model.parameters(), lr=run.learning_rate)
    folder = TaskRunFolder(run_dir, run)
    task = SegmentTask(run, model, validation, frozenset(validation) | frozenset(test))
    schedule = TaskSchedule(run.name, run.steps, run.eval_every, keep_ties=False)
    progress = train_task_steps(model, optimizer, folder, schedule, task, StepSettings(run.clip), log)
    metrics = {
        "task": run.task,
        "segments": run.segments,
        "carry": run.carry,
        "variant": model.config.variant,
        "seed": run.seed,
        "steps": run.steps,
        "best_step": progress.best_step,
        "validation_char_accuracy": progress.best,
        "test": scores(model, test),
        "test_samples": TEST_SIZE,
        "train_seconds": round(progress.seconds, 1),
        "threads": torch.get_num_threads(),
        "curve": progress.curve,
        "training": asdict(run),
    }
    metrics["weights_dtype"] = storage_dtype(model, test, metrics["test"])
    save_checkpoint(
        out,
        model,
        character_tokenizer(TOKENS[4:]),
        meta={"task": run.task, "variant": variant_line(model.config), "example": text(test[0].stream)},
        metrics=metrics,
        weights_dtype=metrics["weights_dtype"],
    )
    log(f"{run.name}: test char accuracy {metrics['test']['char_accuracy']:.4f} -> {out}")
    folder.write_metrics(metrics)
    return metrics
