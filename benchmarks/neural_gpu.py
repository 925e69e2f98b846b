"""The Neural GPU against the GRU + attention baseline: time per sequence as
the input grows, and the growth rate of each.

Both models read random bit strings in the reverse task's format (n bits,
then EOS: n + 1 source tokens) and write n + 1 outputs (n bits and EOS):
  Neural GPU      `greedy`: the encoder runs as many steps as the state is
                  long (n + 1), each step rewriting the whole state, so its
                  cost grows about as n^2; the outputs are read off at once;
  GRU + attention a bidirectional GRU over the source (n + 1 steps), then
                  one decoder step per output, attending over the n + 1
                  encoder states: linear while the fixed work of a step
                  dominates, n^2 once the attention does. Its greedy decoding stops
                  once every row has said EOS, which an untrained model may
                  do at once; the benchmark runs its decoder teacher-forced
                  on the reversed bits instead (`run(src, target, n + 1)`):
                  the same n + 1 steps a correct greedy output takes, with
                  the same work per step, and no early stop.
By default both have fresh seeded weights at the size of the algorithmic
checkpoints (the training's own model configs: Neural GPU 24 maps, width 4,
2 CGRU layers; GRU embeddings 24, d_model 48; the bit tasks' vocabulary);
--neural-gpu-checkpoint and --gru-checkpoint load trained folders instead
(the cost does not depend on the weights).

It prints a table of milliseconds per sequence and the ratio Neural GPU /
GRU at every length, then each model's growth rate: the slope of log(time)
against log(length), fitted over every length and between the last two.

    python benchmarks/neural_gpu.py [--lengths 8 16 ... 256] [--repeats 5] [--warmup 1] [--batch 1]
                                    [--threads 1] [--case-seconds 8] [--device cpu]
                                    [--neural-gpu-checkpoint DIR] [--gru-checkpoint DIR]

Time: the median of --repeats calls (fewer once they have taken
--case-seconds) after --warmup untimed ones, under torch.no_grad, per
sequence (a call's time over --batch). With other work on the machine
absolute times wander; the ratios of one run stay comparable.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from inference.core.checkpoint import CheckpointError, load_checkpoint
from inference.core.decoding import pad_batch
from inference.core.family import build_model, config_from_dict
from inference.core.tokenizer import TextTokenizer
from training.loop.neural_gpu_task_run import AlgorithmicRun, task_tokenizer
from training.tasks.neural_gpu_tasks import sample

MODELS = {"neural_gpu": "Neural GPU", "gru_attention": "GRU + attention"}


@dataclass
class Contender:
    """One model under test and how it decodes a batch of sources of one length."""

    name: str
    model: torch.nn.Module
    tokenizer: TextTokenizer

    def decode(self, src_ids: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """src_ids [b, n + 1] (bits, EOS), tgt_in [b, n + 1] (BOS, target bits) -> output tokens [b, n + 1]."""
        n = src_ids.shape[1] - 1
        if self.name == "neural_gpu":
            return self.model.greedy(src_ids, n)[0]
        return self.model.run(src_ids, tgt_in, n + 1)[1]  # teacher-forced: exactly n + 1 steps (module doc)


def fresh_contender(name: str, device: torch.device, seed: int = 0) -> Contender:
    """`name` with seeded random weights at the size of the algorithmic checkpoints."""
    tokenizer = task_tokenizer()
    torch.manual_seed(seed)
    config = AlgorithmicRun(task="reverse", model=name, seed=seed).model_config(tokenizer)
    return Contender(name, build_model(config_from_dict(config)).to(device).eval(), tokenizer)


def checkpoint_contender(name: str, folder: str, device: torch.device) -> Contender:
    try:
        loaded = load_checkpoint(folder, device)
    except CheckpointError as error:
        raise SystemExit(f"cannot load {folder}: {error}") from error
    if loaded.config.title != MODELS[name]:
        raise SystemExit(f"{folder} holds a {loaded.config.title} model, not a {MODELS[name]}")
    return Contender(name, loaded.model, loaded.tokenizer)


def reverse_batch(tokenizer: TextTokenizer, length: int, batch: int, device: torch.device, seed: int = 1):
    """Random reverse-task samples of `length` bits -> (src_ids [b, length + 1], tgt_in [b, length + 1])."""
    rng = random.Random(f"benchmark/{length}/{seed}")
    samples = [sample("reverse", length, rng) for _ in range(batch)]
    targets = tokenizer.encode_batch([s.target for s in samples])
    src_ids = pad_batch(tokenizer.encode_sources([s.source for s in samples]), tokenizer.pad_id, device)
    tgt_in = pad_batch([[tokenizer.bos_id, *t] for t in targets], tokenizer.pad_id, device)
    return src_ids, tgt_in


def median_ms(call: Callable[[], object], repeats: int, budget_s: float, device: torch.device) -> float:
    """Median of `repeats` timed calls, fewer once they have taken `budget_s` (one at least)."""
    times = []
    while len(times) < repeats and (not times or sum(times) < budget_s):
        start = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def ms_per_sequence(contender: Contender, length: int, args: argparse.Namespace, device: torch.device) -> float:
    src_ids, tgt_in = reverse_batch(contender.tokenizer, length, args.batch, device)
    with torch.no_grad():
        tokens = contender.decode(src_ids, tgt_in)
        if tokens.shape != (args.batch, length + 1):  # both models write n bits and EOS
            raise RuntimeError(f"{contender.name} wrote {tuple(tokens.shape)} tokens at length {length}")
        for _ in range(args.warmup - 1):  # the check's call was the first warm-up
            contender.decode(src_ids, tgt_in)
        ms = median_ms(lambda: contender.decode(src_ids, tgt_in), args.repeats, args.case_seconds, device)
    return ms / args.batch


def growth_exponent(lengths: list[int], times: list[float]) -> float:
    """The least-squares slope of log(time) against log(length): time ∝ length^slope."""
    if len(set(lengths)) < 2:
        raise ValueError("a growth rate needs at least two different lengths")
    xs, ys = [math.log(n) for n in lengths], [math.log(t) for t in times]
    x_mean, y_mean = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - x_mean) * (y - y_mean) for x, y in zip(xs, ys)) / sum((x - x_mean) ** 2 for x in xs)


def describe_growth(title: str, lengths: list[int], times: list[float]) -> str:
    line = f"{title}: time ∝ length^{growth_exponent(lengths, times):.2f} (fit over {lengths[0]}..{lengths[-1]})"
    if len(lengths) > 2:
        line += f", ^{growth_exponent(lengths[-2:], times[-2:]):.2f} from {lengths[-2]} to {lengths[-1]}"
    return line


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[8, 16, 32, 64, 128, 256], help="input bits")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per case (median)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls per case before the timed ones")
    parser.add_argument("--batch", type=int, default=1, help="sequences per call")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--case-seconds", type=float, default=8.0, help="fewer timed calls once they take this long")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--neural-gpu-checkpoint", metavar="DIR", help="a trained Neural GPU folder")
    parser.add_argument("--gru-checkpoint", metavar="DIR", help="a trained GRU + attention folder")
    args = parser.parse_args()
    args.lengths = sorted(set(args.lengths))
    if len(args.lengths) < 2 or args.lengths[0] < 1:
        parser.error("--lengths needs at least two different lengths of 1 bit or more")
    if min(args.repeats, args.warmup, args.batch, args.threads) < 1:
        parser.error("--repeats, --warmup, --batch and --threads are at least 1")
    return args


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    folders = {"neural_gpu": args.neural_gpu_checkpoint, "gru_attention": args.gru_checkpoint}
    contenders = [
        checkpoint_contender(name, folder, device) if folder else fresh_contender(name, device)
        for name, folder in folders.items()
    ]
    for contender in contenders:
        if contender.model.config.max_positions < args.lengths[-1] + 1:
            raise SystemExit(f"{MODELS[contender.name]} holds at most {contender.model.config.max_positions} tokens")
    times = {c.name: [ms_per_sequence(c, n, args, device) for n in args.lengths] for c in contenders}

    for contender, folder in zip(contenders, folders.values()):
        parameters = sum(p.numel() for p in contender.model.parameters())
        weights = f"checkpoint {folder}" if folder else "fresh seeded weights"
        print(f"{contender.model.config.summary}; {parameters:,} parameters, {weights}")
    print(
        f"reverse-task inputs (n random bits + EOS), n + 1 outputs; device {args.device}, batch {args.batch}, "
        f"threads {args.threads}, median of {args.repeats} timed calls per case (fewer past "
        f"{args.case_seconds:g} s) after {args.warmup} warm-up, torch.no_grad; GRU decoder teacher-forced\n"
    )
    header = f"{'length':>6} | {'NGPU ms/seq':>11} {'GRU ms/seq':>11} | {'NGPU/GRU':>8}"
    print(header)
    print("-" * len(header))
    for i, n in enumerate(args.lengths):
        ngpu, gru = times["neural_gpu"][i], times["gru_attention"][i]
        print(f"{n:>6} | {ngpu:>11.3f} {gru:>11.3f} | {ngpu / gru:>8.2f}")
    print()
    for name, title in MODELS.items():
        print(describe_growth(title, args.lengths, times[name]))


if __name__ == "__main__":
    main()
