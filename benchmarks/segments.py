"""Segment recurrence against full attention: time and peak memory of one
forward pass as the input grows.

One recurrent-memory decoder (random weights; cost does not depend on them)
reads inputs of 64 ... 4096 tokens three ways, in one run (at 64 tokens, one
segment, RMT and full are the same computation):
  RMT   segment by segment, memory tokens read and written (linear in length);
  XL    the same layers as Transformer-XL, a cache as long as the RMT memory,
        no memory tokens (linear);
  full  the same weights as one segment as long as the input
        (`with_segment_length`, memory blocks included): quadratic.
It prints a table of milliseconds and megabytes per pass with the ratios
full / RMT, then the input length where full attention starts to cost more
than RMT (interpolated on log-log axes between the measured lengths).

    python benchmarks/segments.py [--tokens 64 128 ... 4096] [--repeats 5] [--case-seconds 8] [--threads 1]
                                  [--device cpu]

Each case (variant, length) runs in a fresh Python process, so that memory
freed and kept by the allocator in one case cannot hide the next case's.
Peak memory on CPU: that process builds the model and the input, runs a
short warm-up pass (lazy one-time allocations), reads its resident set size,
resets the kernel's peak mark (writing 5 to /proc/self/clear_refs, Linux),
runs the measured pass and reads the peak mark (VmHWM) again: the difference
is the most memory the pass added, torch's allocations included (tracemalloc
does not see them). On CUDA: torch.cuda.max_memory_allocated above what was
allocated before the pass. Time: the median of --repeats passes after that
one (fewer once they have taken --case-seconds), under torch.no_grad. The
threads are set in every case (--threads, also OMP_NUM_THREADS); with other
work on the machine absolute times wander, the ratios of one run stay
comparable.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from inference.core.family import build_model, config_from_dict

VARIANTS = ("rmt", "xl", "full")
SIZES = {
    "vocab_size": 53,
    "d_model": 64,
    "d_ff": 256,
    "n_heads": 4,
    "n_layers": 2,
    "segment_length": 64,
    "memory_size": 8,
}


def rmt_model(max_positions: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = config_from_dict({"family": "recurrent_memory", "max_positions": max_positions} | SIZES)
    return build_model(config).eval()


def variant_model(variant: str, tokens: int) -> torch.nn.Module:
    """The RMT model, or its weights read as Transformer-XL or as one full-attention segment of `tokens`."""
    rmt = rmt_model(max_positions=tokens)
    if variant == "rmt":
        return rmt
    if variant == "full":
        model = build_model(rmt.config.with_segment_length(tokens)).eval()
        model.load_state_dict(rmt.state_dict())
        return model
    config = config_from_dict(
        {"family": "recurrent_memory", "max_positions": tokens, "memory_size": 0}
        | {k: v for k, v in SIZES.items() if k != "memory_size"}
        | {"cache_length": SIZES["memory_size"]}
    )
    model = build_model(config).eval()
    layers = {name: value for name, value in rmt.state_dict().items() if name != "memory_init"}
    missing = model.load_state_dict(layers, strict=False).missing_keys
    assert missing == ["memory_init"], missing  # every other weight is the RMT's
    return model


def proc_status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}: peak memory on CPU needs Linux")


def peak_mb(forward, device: torch.device) -> float:
    """Most memory one call of `forward` adds above what is held before it, in MB (2**20 bytes)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        forward()
        torch.cuda.synchronize(device)
        return (torch.cuda.max_memory_allocated(device) - before) / 2**20
    before = proc_status_kib("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the peak mark (VmHWM) restarts from the current RSS
    forward()
    return (proc_status_kib("VmHWM") - before) / 2**10


def median_ms(forward, repeats: int, budget_s: float, device: torch.device) -> float:
    """Median of `repeats` timed calls, fewer once they have taken `budget_s` (one at least)."""
    times = []
    while len(times) < repeats and (not times or sum(times) < budget_s):
        start = time.perf_counter()
        forward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure_case(variant: str, tokens: int, batch: int, repeats: int, budget_s: float, device: torch.device) -> dict:
    """One variant at one length, in this process: {"ms", "mb", "segments"}."""
    model = variant_model(variant, tokens).to(device)
    torch.manual_seed(1)
    ids = torch.randint(3, SIZES["vocab_size"], (batch, tokens), device=device)  # [b, n]
    with torch.no_grad():
        model(ids[:, :8])  # warm-up: one-time allocations stay out of the measured peak
        mb = peak_mb(lambda: model(ids), device)
        ms = median_ms(lambda: model(ids), repeats, budget_s, device)
    return {"ms": ms, "mb": mb, "segments": len(model.segment_starts(tokens))}


def run_case(variant: str, tokens: int, args: argparse.Namespace) -> dict:
    """measure_case in a fresh Python process."""
    command = [sys.executable, __file__, "--case", variant, "--tokens", str(tokens)]
    command += ["--batch", str(args.batch), "--repeats", str(args.repeats), "--threads", str(args.threads)]
    command += ["--case-seconds", str(args.case_seconds), "--device", args.device]
    env = os.environ | {"OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{variant} at {tokens} tokens failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def crossing(tokens: list[int], ratios: list[float]) -> float | None:
    """The length from which full attention costs more than RMT for good
    (ratio full/RMT >= 1 at every measured length from there on), on log-log
    axes between the last length where the ratio is below 1 and the next;
    None when the ratio never stays at or above 1 to the end. The smallest
    length when it is at or above 1 everywhere (the crossing lies at or below it)."""
    below = [i for i, ratio in enumerate(ratios) if ratio < 1]
    if not below:
        return float(tokens[0])
    i = below[-1]
    if i == len(ratios) - 1:
        return None
    (n0, n1), (r0, r1) = tokens[i : i + 2], ratios[i : i + 2]
    fraction = -math.log(r0) / (math.log(r1) - math.log(r0))  # where log ratio reaches 0
    return math.exp(math.log(n0) + fraction * (math.log(n1) - math.log(n0)))


def describe_crossing(what: str, tokens: list[int], ratios: list[float]) -> str:
    at = crossing(tokens, ratios)
    if at is None:
        return f"{what}: full attention costs less than RMT up to {tokens[-1]} tokens (no crossing measured)"
    if not any(ratio < 1 for ratio in ratios):
        return f"{what}: full attention already costs more than RMT at {tokens[0]} tokens (crossing at or below it)"
    return f"{what}: full attention costs more than RMT from about {at:.0f} tokens on"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048, 4096])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="timed passes per case (median)")
    parser.add_argument("--case-seconds", type=float, default=8.0, help="fewer timed passes once they take this long")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--case", choices=VARIANTS, help=argparse.SUPPRESS)  # one case, in a child process
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    if args.case:
        print(json.dumps(measure_case(args.case, args.tokens[0], args.batch, args.repeats, args.case_seconds, device)))
        return

    tokens = sorted(args.tokens)
    results = {(v, n): run_case(v, n, args) for n in tokens for v in VARIANTS}
    s = SIZES
    print(
        f"recurrent-memory decoder, random weights: d_model {s['d_model']}, {s['n_layers']} layers, "
        f"{s['n_heads']} heads, d_ff {s['d_ff']}, vocabulary {s['vocab_size']}, "
        f"{sum(p.numel() for p in rmt_model(max(tokens)).parameters()):,} parameters"
    )
    print(
        f"RMT: segments of {s['segment_length']} tokens, {s['memory_size']} memory tokens; "
        f"XL: same layers, segments of {s['segment_length']}, cache {s['memory_size']}; "
        "full: the RMT weights as one segment of the whole input"
    )
    print(
        f"device {args.device}, batch {args.batch}, threads {args.threads} (OMP_NUM_THREADS={args.threads}), "
        f"median of {args.repeats} timed passes per case (fewer past {args.case_seconds:g} s) after the measured one, "
        "torch.no_grad, a fresh process per case"
    )
    memory_kind = "CUDA max_memory_allocated" if device.type == "cuda" else "peak RSS (VmHWM) above RSS before"
    print(f"peak MB: {memory_kind}, one pass\n")
    header = (
        f"{'tokens':>6} {'segs':>4} | {'RMT ms':>8} {'XL ms':>8} {'full ms':>9} {'full/RMT':>8} | "
        f"{'RMT MB':>7} {'XL MB':>7} {'full MB':>8} {'full/RMT':>8}"
    )
    print(header)
    print("-" * len(header))
    time_ratios, memory_ratios = [], []
    for n in tokens:
        rmt, xl, full = (results[v, n] for v in VARIANTS)
        time_ratios.append(full["ms"] / rmt["ms"])
        memory_ratios.append(full["mb"] / max(rmt["mb"], 1 / 2**10))  # a page's worth at least
        print(
            f"{n:>6} {rmt['segments']:>4} | {rmt['ms']:>8.1f} {xl['ms']:>8.1f} {full['ms']:>9.1f} "
            f"{time_ratios[-1]:>8.2f} | {rmt['mb']:>7.1f} {xl['mb']:>7.1f} {full['mb']:>8.1f} {memory_ratios[-1]:>8.2f}"
        )
    print()
    for what, ratios in (("time", time_ratios), ("peak memory", memory_ratios)):
        print(describe_crossing(what, tokens, ratios))
    if len(tokens) > 2:
        low, high = tokens[len(tokens) // 2], tokens[-1]
        exponents = ", ".join(
            f"{v} {math.log(results[v, high]['ms'] / results[v, low]['ms']) / math.log(high / low):.2f}"
            for v in VARIANTS
        )
        print(f"time ~ tokens^k from {low} to {high} tokens: {exponents} (linear 1, quadratic 2)")


if __name__ == "__main__":
    main()
