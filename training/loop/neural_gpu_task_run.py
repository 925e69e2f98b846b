"""Train a Neural GPU or the GRU + attention baseline on one of paper 001's
algorithmic tasks (training/tasks/neural_gpu_tasks.py) with a length curriculum, and
test how far it generalises beyond the lengths it saw.

    python -m training algorithmic-task --task addition --model neural_gpu --seed 1 --steps 3000

- Curriculum (the reference code's idea, our rule): the level starts at
  `start_length`; each step trains on one length, the level with probability
  0.8, else a length drawn uniformly from 1 to the level. Every
  `check_every` steps the whole-sequence accuracy on 64 fresh samples at
  the level is measured; at or above `advance_at` the level goes up by one,
  until `max_length`.
- Training facts kept from the reference code: dropout on the state,
  Gaussian noise added to the gradients (standard deviation
  `gradient_noise` / (1 + step)^0.55), and, with `relaxed_sets` r > 1, the
  parameter-sharing relaxation: r sets of the recurrence's weights, step t
  of the state using set t mod r, and `pull` times their squared distance
  from their mean added to the loss. Our rule for the pull: once the
  curriculum is at `max_length`, every check multiplies it by `pull_growth`,
  up to `max_pull`. Validation, the test and the checkpoint use the sets'
  mean, the one shared set every shipped model has, so the model chosen is
  the model shipped. A step costs what it costs unrelaxed (one set per
  step); the optimizer holds r times the recurrence's weights.
- Training batches are drawn fresh from every string of their length: at
  the longest training length, reverse and duplicate have only 2^8 inputs,
  so their 1x test row holds strings seen in training; the 2x-10x rows are
  lengths never trained on. Additions at length 8 have 2^16 inputs.
- Model choice on validation only: whole-sequence accuracy on 256
  validation samples at `max_length`, every `eval_every` steps; the best
  state is tested once at the end.
- Test: greedy outputs at 1, 2, 5 and 10 times `max_length`, and carry-chain
  additions at the same lengths: whole-sequence and per-bit accuracy.
- Resumable: rerunning the same command continues from its run folder.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import torch
import torch.nn.functional as F

from inference.core.checkpoint import save_checkpoint
from inference.core.decoding import pad_batch, strip_after_eos
from inference.core.family import build_model, config_from_dict
from inference.core.model_record import ModelRecord
from inference.core.tokenizer import TextTokenizer, character_tokenizer
from training.loop.distributed import Ranks, join_ranks
from training.loop.steps import StepSettings
from training.loop.task_steps import TaskCallbacks, TaskRunFolder, TaskSchedule, train_task_steps
from training.tasks.neural_gpu_tasks import SYMBOLS, TASKS, Sample, Task, sample, task_split

TEST_FACTORS = (1, 2, 5, 10)
VALIDATION_SIZE, TEST_SIZE, CHECK_SIZE = 256, 128, 64


@runtime_checkable
class RelaxedWeights(Protocol):
    """A model trained with r sets of recurrence weights pulled together (the Neural GPU's relaxation)."""

    def relaxation_distance(self) -> torch.Tensor: ...  # [] how far the sets are apart

    def shared_copy(self) -> torch.nn.Module: ...  # one set, each weight the mean of its r sets


@dataclass(frozen=True)
class AlgorithmicRun:
    task: Task
    model: Literal["neural_gpu", "gru_attention"]
    seed: int
    steps: int = 3000
    max_length: int = 8  # the longest training length ℓ
    start_length: int = 2
    advance_at: float = 0.9  # whole-sequence accuracy at the level that moves the curriculum on
    check_every: int = 50
    batch_size: int = 32
    learning_rate: float = 1e-3
    clip: float = 1.0
    gradient_noise: float = 0.01
    maps: int = 24  # Neural GPU state depth; the GRU's hidden size is 2 x maps
    dropout: float = 0.05
    eval_every: int = 250
    relaxed_sets: int = 1  # r: the Neural GPU's sets of recurrence weights in training (1: shared throughout)
    pull: float = 0.0005  # the relaxation penalty's starting weight
    pull_growth: float = 1.2  # its factor at every check once the curriculum is at max_length
    max_pull: float = 1.0

    def __post_init__(self):
        if self.task not in TASKS or self.model not in MODELS:
            raise ValueError(f"task is one of {', '.join(TASKS)}; model one of {', '.join(MODELS)}")
        if not 1 <= self.start_length <= self.max_length <= 64 or self.steps < 1:
            raise ValueError("lengths: 1 <= start_length <= max_length <= 64; steps at least 1")
        if self.relaxed_sets > 1 and "relaxed_sets" not in TASK_MODELS[self.model](self):
            raise ValueError(f"the {self.model} model's recurrence cannot be relaxed (relaxed_sets > 1)")

    @property
    def name(self) -> str:
        relaxed = f"_relaxed{self.relaxed_sets}" if self.relaxed_sets > 1 else ""
        return f"{self.task}_{self.model}_len{self.max_length}{relaxed}_{self.steps}steps_seed{self.seed}"

    @property
    def data_seed(self) -> str:
        """Seeds the training batches: the same stream of samples whatever the schedule's length."""
        return f"{self.task}_{self.model}_{self.max_length}_seed{self.seed}"

    def model_config(self, tokenizer: TextTokenizer) -> dict:
        """The model's config fields: the run's model, sized by `maps`, with the tokenizer's vocabulary."""
        return {**TASK_MODELS[self.model](self), "vocab_size": tokenizer.vocab_size, "max_positions": 4096}


# The models a task run trains, as config fields (the families' own config data), by the name the CLI takes.
TASK_MODELS: dict[str, Callable[[AlgorithmicRun], dict]] = {
    "gru_attention": lambda run: {"family": "gru_attention", "embed_size": run.maps, "d_model": 2 * run.maps},
    "neural_gpu": lambda run: {
        "family": "active_memory",
        "variant": "neural_gpu",
        "maps": run.maps,
        "dropout": run.dropout,
        "length_factor": 2.0 if run.task == "duplicate" else 1.0,  # room for the longer output
        "relaxed_sets": run.relaxed_sets,
    },
}
MODELS = tuple(TASK_MODELS)


@dataclass
class Curriculum:
    """The training length's level and the rule that moves it (module doc)."""

    level: int
    max_length: int
    advance_at: float

    def length(self, rng: random.Random) -> int:
        return self.level if rng.random() < 0.8 else rng.randint(1, self.level)

    def update(self, accuracy: float) -> bool:
        """Whole-sequence accuracy at the level -> whether the level went up."""
        if accuracy >= self.advance_at and self.level < self.max_length:
            self.level += 1
            return True
        return False


def task_tokenizer() -> TextTokenizer:
    return character_tokenizer(SYMBOLS)


def batch_tensors(samples: list[Sample], tokenizer: TextTokenizer) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src_ids [b, n] with EOS, tgt_in [b, t] BOS + target, tgt_out [b, t] target + EOS)."""
    sources = tokenizer.encode_sources([s.source for s in samples])
    targets = tokenizer.encode_batch([s.target for s in samples])
    pad = tokenizer.pad_id
    return (
        pad_batch(sources, pad),
        pad_batch([[tokenizer.bos_id, *t] for t in targets], pad),
        pad_batch([[*t, tokenizer.eos_id] for t in targets], pad),
    )


@torch.no_grad()
def accuracy(model, samples: list[Sample], tokenizer: TextTokenizer, batch_size: int = 64) -> dict[str, Any]:
    """Greedy outputs against the targets: whole-sequence accuracy and per-bit accuracy (a target bit the
    output lacks counts as wrong), and each sample's outcome (whether its output was the target, and how many
    of its target's bits it wrote right) for intervals resampled over the samples."""
    model.eval()
    sample_whole: list[int] = []
    sample_bit_hits: list[int] = []
    for first in range(0, len(samples), batch_size):
        chunk = samples[first : first + batch_size]
        src_ids = batch_tensors(chunk, tokenizer)[0].to(next(model.parameters()).device)  # [b, n]
        longest = max(len(s.target) for s in chunk)
        tokens, _ = model.greedy(src_ids, longest + 1)
        for ids, s in zip(strip_after_eos(tokens, tokenizer.eos_id), chunk):
            output = tokenizer.decode(ids)
            sample_whole.append(int(output == s.target))
            sample_bit_hits.append(sum(a == b for a, b in zip(output, s.target)))
    return {
        "sequence": sum(sample_whole) / len(samples),
        "bit": sum(sample_bit_hits) / sum(len(s.target) for s in samples),
        "sample_whole": sample_whole,
        "sample_bit_hits": sample_bit_hits,
    }


def length_table(model, task: Task, max_length: int, tokenizer: TextTokenizer) -> list[dict]:
    """Test accuracy at every test length (and on carry chains, for addition)."""
    rows = []
    for factor in TEST_FACTORS:
        length = factor * max_length
        row = {
            "factor": factor,
            "length": length,
            **accuracy(model, task_split(task, "test", length, TEST_SIZE), tokenizer),
        }
        if task == "addition":
            carry = accuracy(model, task_split(task, "carry", length, TEST_SIZE), tokenizer)
            row |= {"carry_sequence": carry["sequence"], "carry_bit": carry["bit"]}
        rows.append(row)
    return rows


def add_gradient_noise(model, scale: float, step: int, generator: torch.Generator) -> None:
    std = scale / (1 + step) ** 0.55
    for p in model.parameters():
        if p.grad is not None:
            p.grad += (torch.randn(p.grad.shape, generator=generator) * std).to(p.grad.device)


class NeuralGPUTask(TaskCallbacks):
    """The step loop's callbacks for a Neural GPU task run: batches at the curriculum's lengths, the loss of the
    target (with the relaxation's pull), gradient noise, the curriculum's checks, whole-sequence validation
    accuracy of the shared model."""

    def __init__(self, run: AlgorithmicRun, model, tokenizer: TextTokenizer, log=print):
        self.run, self.model, self.tokenizer, self.log = run, model, tokenizer, log
        self.device = next(model.parameters()).device
        self.validation = task_split(run.task, "val", run.max_length, VALIDATION_SIZE)
        self.curriculum = Curriculum(run.start_length, run.max_length, run.advance_at)
        self.levels: list[list[int]] = []  # [step, level] whenever the level went up
        self.noise = torch.Generator().manual_seed(run.seed)
        self.rng = random.Random()
        self.pull = run.pull

    def loss(self, step: int, rows: Sequence[int]) -> tuple[torch.Tensor, int]:
        self.rng = random.Random(f"{self.run.data_seed}/{step}")  # the curriculum's check draws on after the batch
        length = self.curriculum.length(self.rng)
        batch = [sample(self.run.task, length, self.rng) for _ in range(self.run.batch_size)]
        # [b, n], [b, t], [b, t]: the whole batch's tensors (padded as it is), then this rank's rows of them
        whole = batch_tensors(batch, self.tokenizer)
        src_ids, tgt_in, tgt_out = (tensor[list(rows)].to(self.device) for tensor in whole)
        logits = self.model(src_ids, tgt_in)  # [b, t, vocab]
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=self.tokenizer.pad_id)
        if self.run.relaxed_sets > 1:
            loss = loss + self.pull * self.model.relaxation_distance()
        return loss, int((tgt_out != self.tokenizer.pad_id).sum())

    def add_noise(self, model, step: int) -> None:
        add_gradient_noise(model, self.run.gradient_noise, step, self.noise)

    def after_step(self, step: int, ranks: Ranks) -> None:
        if (step + 1) % self.run.check_every:
            return
        check = [sample(self.run.task, self.curriculum.level, self.rng) for _ in range(CHECK_SIZE)]  # every rank's
        if self.curriculum.level == self.run.max_length:
            self.pull = min(self.pull * self.run.pull_growth, self.run.max_pull)
        if self.curriculum.update(ranks.from_main(accuracy(self.model, check, self.tokenizer)["sequence"])):
            self.levels.append([step + 1, self.curriculum.level])
            self.log(f"{self.run.name} step {step + 1}: curriculum level {self.curriculum.level}")

    def validate(self) -> tuple[float, list[float], str]:
        level = self.curriculum.level
        if self.run.relaxed_sets == 1:
            return accuracy(self.model, self.validation, self.tokenizer)["sequence"], [level], f" level {level}"
        score = accuracy(self.model.shared_copy(), self.validation, self.tokenizer)["sequence"]
        return score, [level], f" level {level}, sets {self.model.relaxation_distance().item():.3g} apart"

    def state(self) -> dict:
        return {
            "level": self.curriculum.level,
            "levels": self.levels,
            "noise": self.noise.get_state(),
            "pull": self.pull,
        }

    def restore(self, state: dict) -> None:
        self.curriculum.level, self.levels = state["level"], state["levels"]
        self.noise.set_state(state["noise"])
        self.pull = state.get("pull", self.run.pull)


def train_algorithmic(run: AlgorithmicRun, out: Path, run_dir: Path, log=print, device: str = "cpu") -> dict | None:
    """Train (or resume) the run on `device`; write the checkpoint folder; return its metrics (None on a rank of
    a torchrun run other than rank 0, which alone evaluates and writes)."""
    ranks, chosen = join_ranks(device)  # one process, or a rank of a torchrun run
    torch.manual_seed(run.seed)
    tokenizer = task_tokenizer()
    model = build_model(config_from_dict(run.model_config(tokenizer))).to(chosen)
    optimizer = torch.optim.Adam(model.parameters(), lr=run.learning_rate)
    folder = TaskRunFolder(run_dir, run)
    task = NeuralGPUTask(run, model, tokenizer, log if ranks.main else lambda message: None)
    schedule = TaskSchedule(run.name, run.steps, run.eval_every, keep_ties=True, batch_size=run.batch_size)
    settings = StepSettings(run.clip, gradient_hook=task.add_noise)
    progress = train_task_steps(model, optimizer, folder, schedule, task, settings, log, ranks)
    if not ranks.main:
        return None
    relaxation = {}
    if run.relaxed_sets > 1:
        if not isinstance(model, RelaxedWeights):  # AlgorithmicRun relaxes the Neural GPU's recurrence only
            raise TypeError(f"a {type(model).__name__} has no relaxed weight sets")
        relaxation = {"final_pull": task.pull, "sets_apart": model.relaxation_distance().item()}
        model = model.shared_copy()  # the best weights as one shared set: the model tested and shipped
    began_test = time.monotonic()
    metrics = {
        "task": run.task,
        "model": run.model,
        "seed": run.seed,
        "steps": run.steps,
        "best_step": progress.best_step,
        "validation_sequence_accuracy": progress.best,
        "test": length_table(model, run.task, run.max_length, tokenizer),
        "test_samples": TEST_SIZE,
        "train_seconds": round(progress.seconds, 1),
        "test_seconds": round(time.monotonic() - began_test, 1),
        "threads": torch.get_num_threads(),
        "curve": progress.curve,
        "curriculum": task.levels,
        **relaxation,
        "training": asdict(run),
    }
    example = task_split(run.task, "test", run.max_length, 1)[0]
    save_checkpoint(out, model, tokenizer, meta=ModelRecord(task=run.task, example=example.source), metrics=metrics)
    log(f"{run.name}: test {json.dumps(metrics['test'])} -> {out}")
    folder.write_metrics(metrics)
    return metrics
