"""Training on torchrun: 2 gloo ranks on the CPU, each taking half of every global batch, train a tiny model to the
weights one process reaches on the same global batches (dropout off), through the training CLI; a run saved at one
world size resumes at the other to the same weights too.

Not yet equal, so not listed: the Memory Bottleneck (weights 1.2e-4 apart after 3 steps; docs/scaling.md says
what it likely is), the extended Neural GPU
(its state's length follows the longest source of the rank's share, not of the global batch), and the families and
runs not compared yet: working memory (it samples its memory per batch), the language model (the same loop, not
yet compared), and the segment and algorithmic-task runs (loops of their own, not yet data-parallel)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

STEPS = 3
MODELS = {
    "memtransformer": {"family": "memtransformer", "memory_size": 2},
    "transformer": {"family": "transformer", "memory_size": 0},
    "memctrl_shared": {"family": "memctrl_shared", "memory_size": 2},
    "gru_attention": {"family": "gru_attention", "embed_size": 8, "d_model": 16},
}
TRANSFORMER_SIZES = {"d_model": 16, "d_ff": 32, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1}


def config_file(folder, model: dict) -> str:
    sizes = TRANSFORMER_SIZES if "memory_size" in model else {}
    config = {
        "name": "tiny_ranks",
        "model": {**sizes, **model, "dropout": 0.0},
        "data": {"dataset": "multi30k", "vocab_size": 60, "max_len": 24},
        "train": {"epochs": 2, "batch_size": 16, "warmup_steps": 4, "seed": 0, "save_every_steps": 1, "threads": 1},
    }
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


def train(config: str, data_dir, run_dir, ranks: int, steps: int) -> dict[str, torch.Tensor]:
    """Train through the CLI on `ranks` processes (torchrun for 2) up to `steps` steps; the run's saved weights."""
    launch = [sys.executable] if ranks == 1 else [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                   "--nproc-per-node", str(ranks)]  # fmt: skip
    command = [*launch, "-m", "training", "train", config, "--data-dir", str(data_dir), "--run-dir", str(run_dir),
               "--out", str(run_dir / "checkpoint"), "--device", "cpu", "--max-steps", str(steps)]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    state = torch.load(run_dir / "state.pt", map_location="cpu", weights_only=True)
    assert state["progress"]["step"] == steps
    return state["model"]


def assert_same_weights(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor]) -> None:
    """Every weight within 1e-5 (the ranks sum their share of the loss in another order than one process: a few
    steps of Adam leave differences of about 1e-6), except the attention key biases: a key bias adds the same
    q . b to every logit of a query, which softmax ignores, so its gradient is zero but for rounding, and Adam
    (eps 1e-9) turns that rounding into steps of the learning rate's size, in one process as on two. It changes no
    output, so it is left out here."""
    assert ours.keys() == theirs.keys()
    for name in ours:
        if not name.endswith("k_proj.bias"):
            torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=1e-5, msg=name)


@pytest.mark.parametrize("family", list(MODELS))
def test_two_ranks_train_to_the_weights_of_one_process(family, synthetic_data_dir, tmp_path):
    config = config_file(tmp_path, MODELS[family])
    alone = train(config, synthetic_data_dir, tmp_path / "one", 1, STEPS)
    together = train(config, synthetic_data_dir, tmp_path / "two", 2, STEPS)
    assert_same_weights(together, alone)


@pytest.mark.parametrize("first, then", [(2, 1), (1, 2)])
def test_a_run_resumes_on_another_number_of_ranks(first, then, synthetic_data_dir, tmp_path):
    config = config_file(tmp_path, MODELS["memtransformer"])
    alone = train(config, synthetic_data_dir, tmp_path / "one", 1, STEPS + 2)
    train(config, synthetic_data_dir, tmp_path / "resumed", first, STEPS)
    resumed = train(config, synthetic_data_dir, tmp_path / "resumed", then, STEPS + 2)
    assert_same_weights(resumed, alone)
