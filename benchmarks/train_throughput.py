"""Training throughput of the shipped configuration, and the cost of a
memory-size lesion sweep relative to one plain decode.

Prints, in one run:
  training target tokens per second (and source+target tokens per second)
  for the shipped MemTransformer 10 configuration on real Multi30k batches;
  lesion sweep time (BLEU at every inference memory size of the table, each
  a batched greedy decode of the same sentences) / time of one plain batched
  decode of those sentences.

    python benchmarks/train_throughput.py [--checkpoint checkpoints/memtransformer_10] [--steps 30] [--sentences 500]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.family import build_model
from inference.core.losses import StepObjective
from inference.core.places import resolve_data_dir
from inference.runs.lesion import PAPER_MEMORY_SIZES
from inference.runs.translate import translate_all
from training.data.translation import bucketed_batches, make_batch, read_multi30k, tokenize_pairs
from training.evaluation.translation import lesion_sweep
from training.loop.config import load_config
from training.loop.epochs import batch_loss, make_optimizer, noam_lr
from training.loop.steps import StepSettings, optimizer_step


def training_throughput(loaded, config_path: str, steps: int, data_dir) -> tuple[float, float, float]:
    """(target tokens/s, all tokens/s, seconds/step) over `steps` real batches."""
    config = load_config(config_path)
    torch.manual_seed(0)
    model = build_model(config.model_config(loaded.tokenizer))
    optimizer = make_optimizer(model)
    objective = StepObjective(config.train.label_smoothing)
    settings = StepSettings(
        config.train.clip_norm, lambda step: noam_lr(step + 1, model.config.d_model, config.train.warmup_steps)
    )
    examples = tokenize_pairs(loaded.tokenizer, read_multi30k(data_dir, "train"), config.data.max_len)
    batches = bucketed_batches(examples, config.train.batch_size, seed=0)[: steps + 2]
    target_tokens = all_tokens = 0
    for step, indices in enumerate(batches):
        batch = make_batch([examples[i] for i in indices], loaded.tokenizer)
        if step == 2:  # the first steps warm up allocators
            start = time.perf_counter()
        optimizer_step(model, optimizer, partial(batch_loss, model, batch, objective), settings, step)
        if step >= 2:
            target_tokens += int((batch.tgt_out != loaded.tokenizer.pad_id).sum())
            all_tokens += int((batch.src_ids != loaded.tokenizer.pad_id).sum()) + int(
                (batch.tgt_out != loaded.tokenizer.pad_id).sum()
            )
    seconds = time.perf_counter() - start
    return target_tokens / seconds, all_tokens / seconds, seconds / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--checkpoint",
        default="checkpoints/memtransformer_10",
        help="shipped checkpoint: its tokenizer, and its weights for the sweep",
    )
    parser.add_argument("--config", default="training/configs/memtransformer_10.json")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--sentences", type=int, default=500, help="test_2016_flickr sentences decoded for the sweep")
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    data_dir = resolve_data_dir(args.data_dir)
    loaded = load_checkpoint(args.checkpoint, "cpu")

    target_rate, all_rate, step_seconds = training_throughput(loaded, args.config, args.steps, data_dir)
    pairs = read_multi30k(data_dir, "test_2016_flickr")[: args.sentences]
    sources = [german for german, _ in pairs]
    start = time.perf_counter()
    translate_all(loaded.model, loaded.tokenizer, sources)
    plain = time.perf_counter() - start
    start = time.perf_counter()
    sweep = lesion_sweep(loaded.model, loaded.tokenizer, pairs, PAPER_MEMORY_SIZES)
    sweep_seconds = time.perf_counter() - start

    print(
        f"threads {torch.get_num_threads()}; training config {args.config}, {args.steps} steps of real Multi30k batches"
    )
    print(
        f"training: {target_rate:,.0f} target tokens/s, {all_rate:,.0f} source+target tokens/s, "
        f"{step_seconds:.3f} s/step"
    )
    print(f"plain batched greedy decode of {len(sources)} sentences: {plain:.2f} s")
    print(
        f"lesion sweep at memory sizes {sweep['memory_size']} on the same sentences: {sweep_seconds:.2f} s "
        f"(BLEU {', '.join(f'{b:.1f}' for b in sweep['bleu'])})"
    )
    print(
        f"lesion sweep / plain decode: {sweep_seconds / plain:.2f}  ({len(sweep['memory_size'])} decodes; "
        "1 per size is the floor of this method)"
    )


if __name__ == "__main__":
    main()
