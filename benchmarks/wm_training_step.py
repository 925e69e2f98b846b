"""What a working-memory training step (paper 004's Algorithm 1) costs against a plain step of the same model.

Prints, in one run, on the same real Multi30k batches and from the same starting weights:
  seconds per optimiser step with the plain target-token loss (a plain epoch of the working-memory schedule);
  seconds per step with Algorithm 1 (the stream built token by token without gradients, then one forward
  and backward pass over it);
  their ratio, which says how much longer a memory epoch takes than a plain one.

    python benchmarks/wm_training_step.py [--checkpoint checkpoints/working_memory_de_en] [--steps 10]
        [--device cpu|cuda] [--data-dir D]
"""

from __future__ import annotations

import argparse
import copy
import time

import torch

from inference.core.checkpoint import load_checkpoint
from training.config import WorkingMemoryTraining
from training.data import bucketed_batches, make_batch, read_multi30k, resolve_data_dir, tokenize_pairs
from training.loop import make_optimizer, optimizer_step
from training.objectives import objective_for_epoch

WARMUP_STEPS = 2  # allocator and kernel warm-up, not timed
MAX_LEN = 100
BATCH_SIZE = 64


def seconds_per_step(model, batches, settings: WorkingMemoryTraining, epoch: int, device: str) -> float:
    """Mean seconds of an optimiser step of `epoch`'s objective over `batches` (after the warm-up steps)."""
    optimizer = make_optimizer(model)
    objective = objective_for_epoch(model, 0.1, settings, epoch)
    train = argparse.Namespace(clip_norm=1.0, label_smoothing=0.1)
    for step, batch in enumerate(batches):
        if step == WARMUP_STEPS:
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.perf_counter()
        optimizer_step(model, optimizer, batch, train, 1e-4, objective, seed=step)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / (len(batches) - WARMUP_STEPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="checkpoints/working_memory_de_en")
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each kind")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    loaded = load_checkpoint(args.checkpoint, args.device)
    tokenizer = loaded.tokenizer
    examples = tokenize_pairs(tokenizer, read_multi30k(resolve_data_dir(args.data_dir), "train"), MAX_LEN)
    indices = bucketed_batches(examples, BATCH_SIZE, seed=0)[: args.steps + WARMUP_STEPS]
    batches = [make_batch([examples[i] for i in batch], tokenizer).to(args.device) for batch in indices]
    settings = WorkingMemoryTraining(plain_epochs=1, type_threshold=0.25, type_loss_weight=0.5)

    plain = seconds_per_step(copy.deepcopy(loaded.model), batches, settings, 0, args.device)  # epoch 0: plain
    memory = seconds_per_step(copy.deepcopy(loaded.model), batches, settings, 1, args.device)  # epoch 1: memory
    print(f"device {args.device}, threads {torch.get_num_threads()}; {args.checkpoint}, {args.steps} timed steps")
    print(f"batches of {BATCH_SIZE} Multi30k training pairs, the same for both")
    print(f"plain step (target-token loss):         {plain:.3f} s/step")
    print(f"memory step (Algorithm 1, build + pass): {memory:.3f} s/step")
    print(f"memory / plain: {memory / plain:.2f}")


if __name__ == "__main__":
    main()
