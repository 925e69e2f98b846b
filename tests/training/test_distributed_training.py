"""Training on torchrun: 2 gloo ranks on the CPU, each taking half of every global batch, train a tiny model to the
weights one process reaches on the same global batches (dropout off), through the training CLI (under torchrun for
the two ranks, called in this process for the one, which saves a process start and torch's imports), for every way
a model trains here: the translation families (working memory included: it samples each example's memory from
a draw over the whole global batch), the language models (our own, a segment-recurrent one and a Hugging Face
GPT-2), and the task runs of papers 001 and 002. A run saved at one world size resumes at the other to the same
weights too."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from inference.layers import sinusoid
from training.cli import main

STEPS = 3
PAST_AN_EPOCH = 5  # the synthetic corpus's 255 pairs make 4 batches of 64
SMALL = {"d_model": 16, "d_ff": 32, "n_heads": 2}
TRANSFORMER_SIZES = {**SMALL, "n_encoder_layers": 1, "n_decoder_layers": 1}
# The Memory Transformer family's variants share one loss and one encoder-decoder: the memory-token one and the
# bottleneck (whose weights move furthest from one process's) stand for the plain Transformer and MemCtrl too.
TRANSLATION_MODELS = {
    "memtransformer": {
        **TRANSFORMER_SIZES,
        "family": "memory_transformer",
        "variant": "memtransformer",
        "memory_size": 2,
    },
    "membottleneck": {
        **TRANSFORMER_SIZES,
        "family": "memory_transformer",
        "variant": "membottleneck",
        "memory_size": 2,
    },
    "working_memory": {**TRANSFORMER_SIZES, "family": "working_memory", "memory_size": 2, "top_p": 0.9},
    "gru_attention": {"family": "gru_attention", "embed_size": 8, "d_model": 16},
    "active_memory": {"family": "active_memory", "variant": "extended", "maps": 8, "width": 3},
}
NO_DROPOUT = {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}  # GPT-2's own names
LANGUAGE_MODELS = {
    "language_model": {**SMALL, "family": "language_model", "n_layers": 1, "max_positions": 24},
    "recurrent_memory": {
        **SMALL,
        "family": "recurrent_memory",
        "n_layers": 1,
        "segment_length": 8,
        "memory_size": 2,
        "cache_length": 0,
        "bptt_depth": -1,
    },  # fmt: skip
    "hugging_face": {
        **SMALL,
        "family": "hugging_face",
        "model_type": "gpt2",
        "n_layers": 1,
        "max_positions": 24,
        "hf_config": NO_DROPOUT,
    },  # fmt: skip
}
TASK_RUNS = {
    "segment_task": ["segment-task", "--task", "copy", "--segments", "2", "--carry", "rmt", "--memory", "2"],
    "algorithmic_task": [
        "algorithmic-task",
        "--task",
        "reverse",
        "--model",
        "neural_gpu",
        "--max-length",
        "3",
        "--maps",
        "8",
        "--dropout",
        "0",
    ],  # fmt: skip
}
TRAIN = {"epochs": 2, "batch_size": 16, "warmup_steps": 4, "seed": 0, "save_every_steps": 1, "threads": 1}
# Algorithm 1 from the first step: every step builds its stream with sampled memory tokens.
WORKING_MEMORY = {"plain_epochs": 0, "type_threshold": 0.25, "type_loss_weight": 0.5}


def config_file(folder: Path, family: str, **train: int) -> str:
    if family in LANGUAGE_MODELS:
        model, data = LANGUAGE_MODELS[family], {"dataset": "enwiki", "vocab_size": 80, "max_len": 24, "wikitext": []}
    else:
        model, data = TRANSLATION_MODELS[family], {"dataset": "multi30k", "vocab_size": 60, "max_len": 24}
    config = {"name": "tiny_ranks", "model": model, "data": data, "train": {**TRAIN, **train}}
    if "hf_config" not in model:
        config["model"] = {**model, "dropout": 0.0}
    if family == "working_memory":
        config["working_memory"] = WORKING_MEMORY
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def run_cli(arguments: list[str], ranks: int) -> None:
    """`python -m training ARGUMENTS` on the CPU: on 2 processes under torchrun, or (one process) called here, in
    this process, with the torch settings and random states it changes put back after."""
    if ranks == 1:
        threads, torch_state, python_state = torch.get_num_threads(), torch.random.get_rng_state(), random.getstate()
        try:
            assert main([*arguments, "--device", "cpu"]) == 0
        finally:
            torch.set_num_threads(threads)
            torch.random.set_rng_state(torch_state)
            random.setstate(python_state)
        return
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)]
    finished = subprocess.run([*torchrun, "-m", "training", *arguments, "--device", "cpu"], capture_output=True,
                              text=True, timeout=600)  # fmt: skip
    assert finished.returncode == 0, finished.stdout[-2000:] + finished.stderr[-3000:]


def train(config: str, data_dir: Path, run_dir: Path, ranks: int, steps: int, pause: bool = True):
    """Train a config through the CLI on `ranks` processes up to `steps` steps, paused there (only the resumable
    state saved) or evaluated and written; the run's saved weights."""
    run_cli(["train", config, "--data-dir", str(data_dir), "--run-dir", str(run_dir),
             "--out", str(run_dir / "checkpoint"), "--max-steps", str(steps), *(["--pause"] if pause else [])],
            ranks)  # fmt: skip
    state = torch.load(run_dir / "state.pt", map_location="cpu", weights_only=True)
    assert state["progress"]["step"] == steps
    assert (run_dir / "checkpoint" / "metrics.json").exists() != pause  # rank 0 evaluates and writes
    return state["model"]


def train_task(arguments: list[str], run_dir: Path, ranks: int) -> dict[str, torch.Tensor]:
    """A task run of STEPS steps of 8 samples through the CLI on `ranks` processes; its last weights."""
    run_cli([*arguments, "--seed", "1", "--steps", str(STEPS), "--batch-size", "8", "--run-dir", str(run_dir),
             "--out", str(run_dir / "checkpoint")], ranks)  # fmt: skip
    state = torch.load(run_dir / "state.pt", map_location="cpu", weights_only=True)
    assert state["progress"]["step"] == STEPS
    assert (run_dir / "checkpoint" / "metrics.json").exists()  # rank 0 scored the test split and wrote it
    return state["model"]


def assert_same_weights(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> None:
    """Every weight within 2e-4, but for the directions softmax ignores.

    The ranks sum their shares of the loss in another order than one process, so gradients differ by rounding, and
    Adam's first steps (update = lr * m / (sqrt(v) + 1e-9), about lr * g / |g|) carry a gradient's relative rounding
    into the weights: most weights end within 1e-6, but a weight whose gradient is a near-cancelling sum moves by up
    to 1.2e-4 (Memory Bottleneck, extended Neural GPU) in 3 steps. Without the gradient sum the weights are 1e-2
    apart. Where a weight adds the same amount to every attention logit of a query, softmax ignores it, its
    gradient is rounding alone, and Adam turns that into steps of the learning rate's size:
    - an attention key bias (q . b, the same for every key; GPT-2's is the middle third of c_attn.bias): left out
      (0.07 apart);
    - the relative-position projection W_r of the segment-recurrent models, on the sinusoid's low-frequency
      columns, nearly constant over the distances a segment spans: its columns are compared as they move the
      logits, each column's difference times its input's spread over those distances (1.2e-2 apart on the
      column that spreads 5e-6, 6e-8 in the logits)."""
    assert ours.keys() == theirs.keys()
    for name in ours:
        difference = ours[name] - theirs[name]
        if name.endswith("k_proj.bias"):
            continue
        if name.endswith("c_attn.bias"):  # GPT-2's query, key and value biases in one: the key's left out
            query, _, value = difference.chunk(3)
            difference = torch.cat([query, value])
        if name.endswith("r_proj.weight"):  # [d_model, d_model] applied to sinusoid(distance) [d_model]
            difference = difference * spread_over_distances(difference.shape[1])
        largest = difference.abs().max().item() if difference.numel() else 0.0  # an empty memory: nothing to compare
        assert largest <= 2e-4, f"{name}: {largest:.2e}"


def spread_over_distances(d_model: int, farthest: int = 24) -> torch.Tensor:
    """[d_model]: how far each input of W_r ranges over the relative distances -farthest..farthest."""
    inputs = sinusoid(torch.arange(-farthest, farthest + 1), d_model)  # [distances, d_model]
    return inputs.max(0).values - inputs.min(0).values


@pytest.mark.parametrize("family", [*TRANSLATION_MODELS, *LANGUAGE_MODELS])
def test_two_ranks_train_to_the_weights_of_one_process(family, synthetic_data_dir, synthetic_lm_data_dir, tmp_path):
    data_dir = synthetic_lm_data_dir if family in LANGUAGE_MODELS else synthetic_data_dir
    config = config_file(tmp_path, family)
    alone = train(config, data_dir, tmp_path / "one", 1, STEPS)
    together = train(config, data_dir, tmp_path / "two", 2, STEPS)
    assert_same_weights(together, alone)


@pytest.mark.parametrize("run", list(TASK_RUNS))
def test_two_ranks_take_the_steps_of_one_process_on_a_task(run, tmp_path):
    alone = train_task(TASK_RUNS[run], tmp_path / "one", 1)
    together = train_task(TASK_RUNS[run], tmp_path / "two", 2)
    assert_same_weights(together, alone)


@pytest.mark.parametrize("first, then", [(2, 1), (1, 2)])
def test_a_run_resumes_on_another_number_of_ranks(first, then, synthetic_data_dir, tmp_path):
    """Resumed past the first epoch's end, which rank 0 alone validates. (Batches of 64, so that the epoch ends
    within a few steps: the ranks' rounding, carried on by Adam at this warm-up's learning rate, grows from 4e-6
    after 10 steps to 4.4e-4 after 18, with or without an epoch's end between.)"""
    config = config_file(tmp_path, "memtransformer", batch_size=64)
    alone = train(config, synthetic_data_dir, tmp_path / "one", 1, PAST_AN_EPOCH)
    train(config, synthetic_data_dir, tmp_path / "resumed", first, STEPS)
    resumed = train(config, synthetic_data_dir, tmp_path / "resumed", then, PAST_AN_EPOCH, pause=False)
    assert_same_weights(resumed, alone)
    progress = torch.load(tmp_path / "resumed" / "state.pt", weights_only=True)["progress"]
    assert progress["epoch"] == 1 and len(progress["val_loss"]) == len(progress["val_bleu"]) == 1


EXITING_RANKS = """
import atexit
import os

import torch

from training.loop.distributed import join_ranks


def report_threads() -> None:  # registered first, so it runs after join_ranks' own exit handler
    names = [open(f"/proc/self/task/{task}/comm").read().strip() for task in os.listdir("/proc/self/task")]
    print(f"rank {os.environ['RANK']} gloo threads at exit: {sorted(n for n in names if 'gloo' in n)}", flush=True)


atexit.register(report_threads)
ranks, _ = join_ranks("cpu")
assert ranks.total(ranks.rank + 1) == 3
weight = torch.nn.Parameter(torch.ones(2))
weight.grad = torch.ones(2)
torch.optim.Adam([weight]).step()  # a run's first step, which imports the modules that keep the group alive
"""


def test_ranks_exit_cleanly_after_their_last_collective(tmp_path):
    """The process group, and with it gloo's threads, is gone before the interpreter's own teardown, even after an
    optimizer step (whose imports, made after the group, kept it alive in their default arguments). A gloo thread
    left to the teardown aborted a rank at exit ("terminate called without an active exception") in about half of
    the launches of a script that does not destroy the group (18 of 40), and now and then in full training runs
    that destroyed it while those imports held it."""
    script = tmp_path / "exiting_ranks.py"
    script.write_text(EXITING_RANKS)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    launch = subprocess.run(torchrun, capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=300)
    assert launch.returncode == 0, launch.stdout[-1500:] + launch.stderr[-1500:]
    for rank in (0, 1):
        assert f"rank {rank} gloo threads at exit: []" in launch.stdout, launch.stdout[-1500:]
