"""Trigger mining throughput and peak memory against the plain forward pass.

Runs, on the same corpus sentences and batches, each in a fresh process:
  forward  the model's forward pass alone (no hooks), the floor;
  capture  run_with_trace capturing every FF layer's key coefficients;
  mining   mine_triggers: the capture plus the running top-k per key;
and prints sentences per second, peak resident memory of the process (and
peak CUDA memory on a GPU) for each, with the ratios to the forward pass.

    python benchmarks/mining.py [--checkpoint checkpoints/language_model] [--sentences 2000] [--batch 64]

The corpus is the checkpoint's own (training/studies/ff_keys.py: a seeded sample of
enwiki training sentences for the language model).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import time

import torch

from inference.analyses.ff_values import ff_memories
from inference.core.capabilities import Capability
from inference.core.checkpoint import load_checkpoint
from inference.core.decoding import pad_batch
from inference.core.family import capabilities_of
from inference.core.places import resolve_data_dir
from inference.corpus_jobs.states import mine_triggers
from inference.runs.trigger_mining import prefix_stream, trace_texts
from training.studies.ff_keys import study_corpus

MODES = ("forward", "capture", "mining")


def run_mode(mode: str, checkpoint: str, device: str, texts: list[str], sources: list[str] | None, batch: int) -> dict:
    """One mode in this process: sentences/s and peak memory."""
    loaded = load_checkpoint(checkpoint, device)
    hooks = ff_memories(loaded.model).key_hooks()
    batches = [slice(start, start + batch) for start in range(0, len(texts), batch)]
    if loaded.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with torch.inference_mode():
        if mode == "mining":
            mine_triggers(loaded, texts, sources, batch_size=batch)
        else:
            for part in batches:
                batch_sources = None if sources is None else sources[part]
                if mode == "capture":  # what mining runs per batch before its top-k update
                    trace_texts(loaded, texts[part], batch_sources, hooks)
                else:
                    forward(loaded, texts[part], batch_sources)
    if loaded.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {
        "sentences_per_second": len(texts) / seconds,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_cuda_mb": torch.cuda.max_memory_allocated() / 2**20 if loaded.device.type == "cuda" else None,
    }


def forward(loaded, texts: list[str], sources: list[str] | None) -> None:
    """The plain forward pass over the same streams mining reads."""
    config = loaded.config
    streams = [prefix_stream(loaded, text) for text in texts]
    if Capability.TRANSLATES not in capabilities_of(loaded.config):
        loaded.model(pad_batch(streams, config.pad_id, loaded.device))
        return
    src = pad_batch(loaded.tokenizer.encode_sources(sources), config.pad_id, loaded.device)
    loaded.model(src, pad_batch([s[:-1] for s in streams], config.pad_id, loaded.device), config.memory_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="checkpoints/language_model")
    parser.add_argument("--data-dir")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    loaded = load_checkpoint(args.checkpoint, "cpu")
    corpus = study_corpus(loaded, resolve_data_dir(args.data_dir), args.sentences, 0)
    tokens = sum(len(prefix_stream(loaded, text)) for text in corpus.texts)
    print(
        f"{loaded.name} on {args.device}, torch threads {torch.get_num_threads()}: {len(corpus.texts):,} sentences "
        f"({tokens:,} tokens) of {corpus.description}, batches of {args.batch}"
    )
    context = multiprocessing.get_context("spawn")  # a fresh process per mode: its peak memory is its own
    results = {}
    for mode in MODES:
        with context.Pool(1) as pool:
            results[mode] = pool.apply(
                run_mode, (mode, args.checkpoint, args.device, corpus.texts, corpus.sources, args.batch)
            )
    floor = results["forward"]
    print(
        f"{'mode':<9} {'sentences/s':>12} {'x forward':>10} {'peak RSS MB':>12} {'x forward':>10}"
        + ("  peak CUDA MB" if floor["peak_cuda_mb"] is not None else "")
    )
    for mode, r in results.items():
        line = (
            f"{mode:<9} {r['sentences_per_second']:>12.1f} "
            f"{r['sentences_per_second'] / floor['sentences_per_second']:>10.2f} "
            f"{r['peak_rss_mb']:>12.0f} {r['peak_rss_mb'] / floor['peak_rss_mb']:>10.2f}"
        )
        print(line + (f"  {r['peak_cuda_mb']:.0f}" if r["peak_cuda_mb"] is not None else ""))


if __name__ == "__main__":
    main()
