"""What a working-memory training step (paper 004's Algorithm 1) costs against a plain step of the same model.

Prints, in one run, on the same real Multi30k batches and from the same starting weights:
  seconds per optimiser step with the plain target-token loss (a plain epoch of the working-memory schedule);
  seconds per step with Algorithm 1 (the stream built token by token without gradients, then one forward
  and backward pass over it);
  their ratio, which says how much longer a memory epoch takes than a plain one.

    python benchmarks/wm_training_step.py [--checkpoint checkpoints/working_memory_de_en]
        [--config training/configs/working_memory_de_en.json] [--steps 10] [--device cpu|cuda] [--data-dir D]

Batch size, maximum length, label smoothing, clipping and Algorithm 1's settings come from the training config.
"""

from __future__ import annotations

import argparse
import copy
import time
from dataclasses import replace
from functools import partial

import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.losses import StepObjective
from inference.core.places import resolve_data_dir
from training.data.translation import bucketed_batches, make_batch, read_multi30k, tokenize_pairs
from training.loop.config import LoopConfig, load_config
from training.loop.epochs import batch_loss, make_optimizer
from training.loop.steps import StepSettings, optimizer_step

WARMUP_STEPS = 2  # allocator and kernel warm-up, not timed
LR = 1e-4  # fixed: the schedule does not change a step's cost


def seconds_per_step(model, batches, train: LoopConfig, objective: StepObjective, device: str) -> float:
    """Mean seconds of an optimiser step of `objective` over `batches` (after the warm-up steps)."""
    optimizer = make_optimizer(model)
    settings = StepSettings(train.clip_norm, learning_rate=lambda step: LR)
    for step, batch in enumerate(batches):
        if step == WARMUP_STEPS:
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.perf_counter()
        step_objective = replace(objective, seed=step)
        optimizer_step(model, optimizer, partial(batch_loss, model, batch, step_objective), settings, step)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / (len(batches) - WARMUP_STEPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="checkpoints/working_memory_de_en")
    parser.add_argument("--config", default="training/configs/working_memory_de_en.json")
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each kind")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    config = load_config(args.config)
    loaded = load_checkpoint(args.checkpoint, args.device)
    tokenizer, train, wm = loaded.tokenizer, config.train, config.family_options
    examples = tokenize_pairs(tokenizer, read_multi30k(resolve_data_dir(args.data_dir), "train"), config.data.max_len)
    indices = bucketed_batches(examples, train.batch_size, seed=0)[: args.steps + WARMUP_STEPS]
    batches = [make_batch([examples[i] for i in batch], tokenizer).to(args.device) for batch in indices]

    model = loaded.model
    plain_loss = StepObjective(train.label_smoothing, 0, options=wm)  # no memory: the plain epochs' loss
    memory_loss = StepObjective(train.label_smoothing, wm.plain_epochs, options=wm)  # the first memory epoch
    plain = seconds_per_step(copy.deepcopy(model), batches, train, plain_loss, args.device)
    memory = seconds_per_step(copy.deepcopy(model), batches, train, memory_loss, args.device)
    print(f"device {args.device}, threads {torch.get_num_threads()}; {args.checkpoint}, {args.steps} timed steps")
    print(f"batches of {train.batch_size} Multi30k training pairs ({args.config}), the same for both")
    print(f"plain step (target-token loss):         {plain:.3f} s/step")
    print(f"memory step (Algorithm 1, build + pass): {memory:.3f} s/step")
    print(f"memory / plain: {memory / plain:.2f}")


if __name__ == "__main__":
    main()
