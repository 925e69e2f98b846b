"""Work spread over processes against one process, side by side in one run:

- corpus jobs on Ray: FF-key trigger mining (language_model) and a lesion sweep (memtransformer_10, BLEU at every
  memory size), in one process and over 1 and 2 Ray workers, as texts per second and the ratio to one process;
  and what starting Ray costs. Every result is checked equal to the one-process result before its time is
  printed. The corpus is the demo set's sentences repeated (no data directory needed).
- training on torchrun: a training config (memtransformer_10's, on the data directory's Multi30k) for a number of
  steps on 1 and on 2 ranks through the training CLI, as target tokens per second of training and the ratio to
  one rank. On the CPU the machine's cores are shared out (torch threads per rank = cores / ranks); on GPUs each
  rank has its own.

    python benchmarks/scaling.py [--device cpu|cuda] [--sentences 512] [--workers 1 2] [--ranks 1 2]
                                 [--train-steps 30] [--only ray|training]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

from app.services.demo import demo_sentences
from inference.analyses.ff_values import ff_memories
from inference.core.checkpoint import load_checkpoint
from inference.core.places import CHECKPOINTS_DIR, REPO_ROOT
from inference.corpus_jobs.job import CorpusJob, run_in_process
from inference.corpus_jobs.ray_executor import RayExecutor, start_ray
from inference.corpus_jobs.states import mining_job, sweep_job
from inference.runs.lesion import lesion_sizes


def descendants_mb(pid: int) -> float:
    """Resident memory of the processes `pid` started, and theirs (Linux /proc)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            status = Path(f"/proc/{child}/status").read_text().splitlines()
            total += int(next(line.split()[1] for line in status if line.startswith("VmRSS"))) / 1024
            total += descendants_mb(int(child))
    return total


def timed(run) -> tuple[float, object]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def same(ours, theirs) -> bool:
    if hasattr(ours, "coefficients"):  # a mining state
        return all(
            torch.equal(getattr(ours, name)[layer], getattr(theirs, name)[layer])
            for name in ("coefficients", "sentences", "positions")
            for layer in ours.coefficients
        )
    return ours == theirs


def compare(name: str, folder, job: CorpusJob, texts: int, device: str, workers: list[int]) -> None:
    loaded = load_checkpoint(folder, device)
    seconds, whole = timed(lambda: run_in_process(job, loaded))
    print(f"{name:28} {'one process':>12} {seconds:8.1f} s {texts / seconds:9.1f} texts/s {1.0:6.2f}", flush=True)
    for count in workers:
        executor = RayExecutor(folder, count, on_gpus=device.startswith("cuda"))
        try:
            executor.run(job)  # the actors load the model and warm up once, as a worker's later jobs find them
            ray_seconds, result = timed(partial(executor.run, job))
        finally:
            executor.close()
        if not same(result, whole):
            raise AssertionError(f"{name} on {count} Ray workers differs from one process")
        print(f"{name:28} {f'{count} Ray':>12} {ray_seconds:8.1f} s {texts / ray_seconds:9.1f} texts/s "
              f"{seconds / ray_seconds:6.2f}", flush=True)  # fmt: skip


def training_rate(config: dict, ranks: int, steps: int, device: str, data_dir: str | None) -> float:
    """Target tokens per second of training: `config` trained for `steps` steps on `ranks` processes through the
    CLI (torchrun for more than one), paused there; the run's own count of tokens and seconds (from the first step,
    the vocabulary and data already prepared)."""
    threads = max(1, (os.cpu_count() or 1) // ranks) if device == "cpu" else None
    config = {**config, "train": {**config["train"], "threads": threads, "save_every_steps": steps}}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(config))
        launch = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)] if ranks > 1 else []
        data = ["--data-dir", data_dir] if data_dir else []
        command = [sys.executable, *launch, "-m", "training", "train", str(path), *data, "--device", device,
                   "--run-dir", f"{folder}/run", "--max-steps", str(steps), "--pause"]  # fmt: skip
        subprocess.run(command, check=True, capture_output=True, cwd=REPO_ROOT)
        progress = torch.load(f"{folder}/run/state.pt", weights_only=True)["progress"]
    if progress["epoch"] > 0:
        raise ValueError(f"{steps} steps pass an epoch's end: count tokens within one epoch")
    return progress["epoch_tokens"] / progress["seconds"]


def compare_training(config_path: Path, ranks: list[int], steps: int, device: str, data_dir: str | None) -> None:
    config = json.loads(config_path.read_text())
    print(f"training {config['name']}, global batch {config['train']['batch_size']}, {steps} steps, on {device}")
    print(f"{'ranks':>6} {'target tokens/s':>16} {'speed-up':>9}")
    rates = {count: training_rate(config, count, steps, device, data_dir) for count in ranks}
    for count, rate in rates.items():
        print(f"{count:6d} {rate:16.0f} {rate / rates[ranks[0]]:9.2f}", flush=True)


def compare_ray_jobs(args: argparse.Namespace) -> None:
    demos = demo_sentences()
    repeats = -(-args.sentences // len(demos))
    sources = [d.source for d in demos] * repeats
    references = [d.reference for d in demos] * repeats

    seconds, _ = timed(lambda: start_ray(num_cpus=max(args.workers)))
    print(f"ray.init: {seconds:.1f} s; the processes it started hold {descendants_mb(os.getpid()):.0f} MB")
    print(f"{'job':28} {'executor':>12} {'time':>10} {'throughput':>15} {'speed-up':>6}")

    lm_folder = CHECKPOINTS_DIR / "language_model"
    lm = load_checkpoint(lm_folder, "cpu")
    mining = mining_job(references, None, 10, ff_memories(lm.model).layers)
    compare(f"mining, {len(references)} texts", lm_folder, mining, len(references), args.device, args.workers)

    mt_folder = CHECKPOINTS_DIR / "memtransformer_10"
    mt = load_checkpoint(mt_folder, "cpu")
    sizes = lesion_sizes(mt.config.memory_size, mt.config.max_memory_size)
    sweep = sweep_job(mt, sources, references, sizes, batch_size=64)
    texts = len(sources) * len(sizes)
    compare(f"sweep, {len(sources)} x {len(sizes)} sizes", mt_folder, sweep, texts, args.device, args.workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--train-config", type=Path, default=REPO_ROOT / "training/configs/memtransformer_10.json")
    parser.add_argument("--train-steps", type=int, default=30)
    parser.add_argument("--data-dir", help="the data folder holding the training config's corpus")
    parser.add_argument("--only", choices=["ray", "training"])
    args = parser.parse_args()
    if args.only != "training":
        compare_ray_jobs(args)
    if args.only != "ray":
        compare_training(args.train_config, args.ranks, args.train_steps, args.device, args.data_dir)


if __name__ == "__main__":
    main()
