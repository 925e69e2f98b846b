"""Training on torchrun: 2 gloo ranks on the CPU, each taking half of every global batch, train a tiny model to the
weights one process reaches on the same global batches (dropout off), through the training CLI; a run saved at one
world size resumes at the other to the same weights too.

Not compared yet: working memory (it samples its memory per batch), the language model (the same loop), and the
segment and algorithmic-task runs (loops of their own, not yet data-parallel)."""

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
    "membottleneck": {"family": "membottleneck", "memory_size": 2},
    "gru_attention": {"family": "gru_attention", "embed_size": 8, "d_model": 16},
    "active_memory": {"family": "active_memory", "variant": "extended", "maps": 8, "width": 3},
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
    """Every weight within 2e-4, the attention key biases left out.

    The ranks sum their shares of the loss in another order than one process, so gradients differ by rounding, and
    Adam's first steps (update = lr * m / (sqrt(v) + 1e-9), about lr * g / |g|) carry a gradient's relative rounding
    into the weights: most weights end within 1e-6, but a weight whose gradient is a near-cancelling sum moves by up
    to 1.2e-4 (Memory Bottleneck, extended Neural GPU) in 3 steps. Without the gradient sum the weights are 1e-2
    apart. A key bias adds the same q . b to every logit of a query, which softmax ignores: its gradient is
    rounding alone, Adam turns it into steps of the learning rate's size (0.07 apart), and it changes no output."""
    assert ours.keys() == theirs.keys()
    for name in ours:
        if not name.endswith("k_proj.bias"):
            torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=2e-4, msg=name)


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
