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
- A pretrained base (`--base FOLDER`, a Hugging Face causal LM such as the
  GPT-2 trained here): memory is added to it (the pretrained_memory family),
  `--carry rmt` carries it between segments and `--carry reset` resets it at
  every segment (the control); the task's characters are read as the base
  tokenizer's tokens for them (each must be one token), GO as its BOS.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.capabilities import config_of
from inference.core.checkpoint import cast_copy, load_checkpoint, save_checkpoint
from inference.core.family import build_model, config_from_dict, family_of
from inference.core.model_record import ModelRecord
from inference.core.segment_memory import segment_config
from inference.core.tokenizer import TextTokenizer, character_tokenizer
from training.loop.distributed import join_ranks
from training.loop.steps import StepSettings
from training.loop.task_steps import TaskCallbacks, TaskRunFolder, TaskSchedule, train_task_steps
from training.tasks.rmt_tasks import GENERATORS, GO, TOKENS, Sample, Task, task_split, text

FIRST_CHARACTER = 4  # TOKENS before it are the task tokenizer's special tokens
DEFAULT_MEMORY = 8  # memory tokens (rmt) and cache length (xl) unless a run names another
CARRIES = ("rmt", "xl", "none", "reset")  # reset: memory reset at every segment (a pretrained base only)
VALIDATION_SIZE, TEST_SIZE = 256, 1000


@dataclass(frozen=True)
class TaskRun:
    task: Task
    segments: int
    carry: str  # rmt: memory tokens; xl: Transformer-XL cache; none: each segment alone
    seed: int
    steps: int = 2000
    batch_size: int = 32
    learning_rate: float = 1e-3
    clip: float = 0.25  # the paper's gradient clipping
    memory: int = DEFAULT_MEMORY  # memory tokens or cache length
    d_model: int = 64
    d_ff: int = 256
    n_heads: int = 4
    n_layers: int = 2
    eval_every: int = 100
    base: str | None = None  # a Hugging Face causal LM's folder: memory is added to it (module doc)

    def __post_init__(self):
        if self.carry not in CARRIES:
            raise ValueError(f"carry is one of {', '.join(CARRIES)}, got {self.carry!r}")
        if self.base is not None and self.carry not in ("rmt", "reset"):
            raise ValueError("memory added to a pretrained base is carried (rmt) or reset at every segment (reset)")
        if self.base is None and self.carry == "reset":
            raise ValueError("carry reset applies to memory added to a pretrained base (--base)")
        if not 1 <= self.segments <= 64 or self.steps < 1 or self.memory < 1:
            raise ValueError("segments 1-64, steps and memory at least 1")

    @property
    def name(self) -> str:
        on = f"_on_{Path(self.base).name}" if self.base else ""
        named = self.memory != DEFAULT_MEMORY and self.carry != "none"
        size = str(self.memory) if named else ""  # e.g. xl60: a cache of 60
        return f"{self.task}_{self.segments}seg_{self.carry}{size}{on}_{self.steps}steps_seed{self.seed}"

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

    def memory_fields(self, stream_length: int) -> dict:
        """The memory added to a pretrained base, as the fields of the family that adds it."""
        return {
            "family": "pretrained_memory",
            "memory_size": self.memory,
            "segment_length": math.ceil(stream_length / self.segments),
            "bptt_depth": -1,
            "carry_memory": self.carry == "rmt",
            "max_positions": max(4096, stream_length),
        }


def stream_batch(
    samples: list[Sample], lookup: torch.Tensor | None = None, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, int]:  # ([b, n], first target index)
    """The samples' streams as the model's ids on `device`: `lookup` [len(TOKENS)] maps task ids to a pretrained
    base's (-1: a character it has no token of its own for: ValueError); None: the task's own."""
    starts = {s.target_start for s in samples}
    if len(starts) != 1 or len({len(s.stream) for s in samples}) != 1:
        raise ValueError("a batch holds samples of one layout")
    ids = torch.tensor([s.stream for s in samples], device=device)  # [b, n] task ids
    if lookup is not None:
        ids = lookup.to(device)[ids]
        if bool((ids < 0).any()):
            raise ValueError("a sample holds a task character the base tokenizer has no token of its own for")
    return ids, starts.pop()


def example_text(sample: Sample, tokenizer: TextTokenizer, lookup: torch.Tensor | None) -> str:
    """A sample as text the model's tokenizer reads back as its stream: the task's characters side by side, or,
    where a pretrained base's tokenizer would merge them, apart (each a word), with "<bos>" for GO between."""
    if lookup is None:
        return text(sample.stream)
    wanted = lookup[torch.tensor(sample.stream, device=lookup.device)].tolist()
    source, target = sample.stream[: sample.target_start - 1], sample.stream[sample.target_start :]
    for separator in ("", " "):
        written = f"{separator.join(TOKENS[i] for i in source)}{TOKENS[GO]}{separator.join(TOKENS[i] for i in target)}"
        if tokenizer.encode(written) == wanted:
            return written
    raise ValueError("the base tokenizer reads the task's characters neither side by side nor apart as one token each")


def base_lookup(tokenizer: TextTokenizer, used: set[int], device: torch.device | str) -> torch.Tensor:
    """[len(TOKENS)]: the base tokenizer's id of every task token: GO its BOS, a character its one token of its
    own, -1 for one it has none for (stream_batch refuses it); ValueError naming such a character the task `used`."""
    ids = []
    for i, token in enumerate(TOKENS):
        if i == GO:
            ids.append(tokenizer.bos_id)
            continue
        pieces = tokenizer.encode(token) if i >= FIRST_CHARACTER else []  # the other specials never occur in a stream
        own = len(pieces) == 1 and pieces[0] != tokenizer.unk_id
        if not own and i in used:
            raise ValueError(
                f"the base tokenizer reads the task character {token!r} as {len(pieces)} tokens ({pieces}), "
                "not one of its own"
            )
        ids.append(pieces[0] if own else -1)
    return torch.tensor(ids, device=device)


def target_logits(model, ids: torch.Tensor, start: int) -> torch.Tensor:  # [b, n] -> [b, targets, vocab]
    logits = model(ids)  # [b, n, vocab]
    return logits[:, start - 1 : -1]  # the prediction of every target character


def scores(model, samples: list[Sample], lookup: torch.Tensor | None = None, batch_size: int = 128) -> dict[str, Any]:
    """Teacher-forced per-character accuracy and whole-answer accuracy, and the characters right in each sample
    (for paired intervals between runs on the same samples)."""
    sample_hits: list[int] = []
    total = 0
    device = next(model.parameters()).device
    with torch.no_grad():
        for first in range(0, len(samples), batch_size):
            ids, start = stream_batch(samples[first : first + batch_size], lookup, device)
            hits = target_logits(model, ids, start).argmax(-1) == ids[:, start:]  # [b, targets]
            sample_hits += hits.sum(-1).tolist()
            total += hits.numel()
    targets = total // len(samples)
    return {
        "char_accuracy": sum(sample_hits) / total,
        "answer_accuracy": sum(hits == targets for hits in sample_hits) / len(samples),
        "sample_char_hits": sample_hits,
    }


def storage_dtype(model, test: list[Sample], measured: dict[str, Any], lookup: torch.Tensor | None = None) -> str:
    """float16 where the rounded weights score the test split exactly as the trained ones, else float32."""
    rounded = cast_copy(model, torch.float16).float().eval()
    return "float16" if scores(rounded, test, None if lookup is None else lookup.cpu()) == measured else "float32"


class SegmentTask(TaskCallbacks):
    """The step loop's callbacks for a segment task run: fresh batches that hold no held-out sample, the loss of
    the target characters, per-character validation accuracy."""

    def __init__(
        self,
        run: TaskRun,
        model,
        validation: list[Sample],
        held_out: frozenset[Sample],
        lookup: torch.Tensor | None = None,
    ):
        self.run, self.model, self.validation, self.held_out = run, model, validation, held_out
        self.lookup = lookup

    def loss(self, step: int, rows: Sequence[int]) -> tuple[torch.Tensor, int]:
        rng = random.Random(f"{self.run.data_seed}/{step}")
        batch: list[Sample] = []
        while len(batch) < self.run.batch_size:
            sample = GENERATORS[self.run.task](rng)
            if sample not in self.held_out:
                batch.append(sample)
        mine = [batch[row] for row in rows]  # every stream of a task is as long as the others
        ids, start = stream_batch(mine, self.lookup, next(self.model.parameters()).device)  # [b, n]
        logits = target_logits(self.model, ids, start)  # [b, targets, vocab]
        return F.cross_entropy(logits.flatten(0, 1), ids[:, start:].flatten()), ids[:, start:].numel()

    def validate(self) -> tuple[float, list[float], str]:
        return scores(self.model, self.validation, self.lookup)["char_accuracy"], [], ""


def task_model(
    run: TaskRun, samples: list[Sample], device: torch.device
) -> tuple[nn.Module, TextTokenizer, torch.Tensor | None]:
    """(model, tokenizer, lookup of task ids in the model's vocabulary; None: the task's own) of a new run whose
    held-out `samples` show the stream's length and the task's characters."""
    stream_length = len(samples[0].stream)
    used = {i for sample in samples for i in sample.stream}
    if run.base is None:
        return (
            build_model(config_from_dict(run.model_config(stream_length))).to(device),
            character_tokenizer(TOKENS[FIRST_CHARACTER:]),
            None,
        )
    start = load_checkpoint(Path(run.base), device)
    fields = run.memory_fields(stream_length)
    model = family_of(fields["family"]).warm_start(start.model, fields, run.seed)
    return model, start.tokenizer, base_lookup(start.tokenizer, used, device)


def train_task(run: TaskRun, out: Path, run_dir: Path, log=print, device: str = "cpu") -> dict | None:
    """Train (or resume) the run on `device`; write the checkpoint folder; return its metrics (None on a rank
    of a torchrun run other than rank 0, which alone evaluates and writes)."""
    ranks, chosen = join_ranks(device)  # one process, or a rank of a torchrun run
    torch.manual_seed(run.seed)
    validation = task_split(run.task, "val", VALIDATION_SIZE)
    test = task_split(run.task, "test", TEST_SIZE)
    model, tokenizer, lookup = task_model(run, validation + test, chosen)
    optimizer = torch.optim.Adam(model.parameters(), lr=run.learning_rate)
    folder = TaskRunFolder(run_dir, run)
    task = SegmentTask(run, model, validation, frozenset(validation) | frozenset(test), lookup)
    schedule = TaskSchedule(run.name, run.steps, run.eval_every, keep_ties=False, batch_size=run.batch_size)
    progress = train_task_steps(model, optimizer, folder, schedule, task, StepSettings(run.clip), log, ranks)
    if not ranks.main:
        return None
    config = segment_config(config_of(model))
    metrics: dict[str, Any] = {
        "task": run.task,
        "segments": run.segments,
        "carry": run.carry,
        "memory": run.memory,  # memory tokens (rmt) or cache length (xl)
        "memory_setup": config.memory_setup,
        "seed": run.seed,
        "steps": run.steps,
        "best_step": progress.best_step,
        "validation_char_accuracy": progress.best,
        "test": scores(model, test, lookup),
        "test_samples": TEST_SIZE,
        "train_seconds": round(progress.seconds, 1),
        "threads": torch.get_num_threads(),
        "curve": progress.curve,
        "training": asdict(run),
    }
    model = model.cpu()
    metrics["weights_dtype"] = storage_dtype(model, test, metrics["test"], lookup)
    save_checkpoint(
        out,
        model,
        tokenizer,
        meta=ModelRecord(task=run.task, example=example_text(test[0], tokenizer, lookup)),
        metrics=metrics,
        weights_dtype=metrics["weights_dtype"],
    )
    log(f"{run.name}: test char accuracy {metrics['test']['char_accuracy']:.4f} -> {out}")
    folder.write_metrics(metrics)
    return metrics
