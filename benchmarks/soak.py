"""A real `memlens serve` on the shipped checkpoints under 32 concurrent
clients sending a mix of valid and invalid requests for several minutes.

Prints the requests served, the count of every status, p50 and p95 latency
of the valid and of the invalid requests, the server's resident memory at
the start and at the end with its slope per 100 requests (over the second
half of the run, where a bounded cache has filled), and how long the server
takes to exit on SIGTERM with requests in flight.

    python benchmarks/soak.py [--minutes 4] [--clients 32] [--port 8765]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from app.services.demo import demo_sentences

ROOT = Path(__file__).resolve().parent.parent
TRANSLATORS = ["transformer", "memtransformer_10", "memtransformer_20", "membottleneck_10", "memctrl_20"]
WORKING_MEMORY = ["working_memory_de_en"]


def valid_request(rng: random.Random) -> tuple[str, str, dict | None]:
    """(method, path, JSON body) of a request the server should answer with 200."""
    text = rng.choice(demo_sentences()).source
    model = rng.choice(TRANSLATORS)
    size = rng.choice([None, 0, 5, 10]) if model != "transformer" else None
    lesion = [] if size is None else [{"kind": "memory_size", "size": size}]
    kind = rng.choice(["translate", "translate", "attention", "blocks", "memory", "lens", "models", "keys", "beam"])
    if kind == "translate":
        return "POST", "/api/translate", {"model": model, "text": text, "interventions": lesion}
    if kind == "beam":
        return "POST", "/api/translate", {"model": model, "text": text, "decoding": {"method": "beam", "beam_size": 4}}
    if kind == "attention":
        return (
            "POST",
            "/api/attention",
            {
                "model": model,
                "text": text,
                "stack": "decoder.cross_attn",
                "layer": rng.randrange(4),
                "interventions": lesion,
            },
        )
    if kind == "blocks":
        return "POST", "/api/blocks", {"model": model, "text": text, "interventions": lesion}
    if kind == "memory":
        return "POST", "/api/memory", {"model": WORKING_MEMORY[0], "text": text, "seed": rng.randrange(4)}
    if kind == "lens":
        return (
            "POST",
            "/api/ff/lens",
            {"model": "language_model", "text": rng.choice(["The river flows into the", "A dog runs across the"])},
        )
    if kind == "keys":
        return "POST", "/api/ff/keys", {"model": "language_model", "layer": rng.randrange(6), "limit": 5}
    return "GET", "/api/models", None


def invalid_request(rng: random.Random) -> tuple[str, str, dict | str | None]:
    """A request the server must refuse with a 4xx."""
    text = rng.choice(demo_sentences()).source
    kind = rng.randrange(9)
    if kind == 0:
        return "POST", "/api/translate", '{"model": "transformer", "text": "ein \\ud800 Hund"}'
    if kind == 1:
        return "POST", "/api/translate", {"model": "transformer", "text": "\u200b\u200d\u202e"}
    if kind == 2:
        return (
            "POST",
            "/api/ff/keys",
            {"model": "language_model", "keys": list(range(rng.choice([500, 50_000, 400_000])))},
        )
    if kind == 3:
        heads = [{"attn": "decoder.layers.1.cross_attn", "head": h % 8} for h in range(20_000)]
        return (
            "POST",
            "/api/translate",
            {"model": "memtransformer_10", "text": text, "interventions": {"ablate_heads": heads}},
        )
    if kind == 4:
        return (
            "POST",
            "/api/ff/lens",
            '{"model": "language_model", "text": "a", '
            '"interventions": {"scale_ff_keys": [{"ff": "layers.0.ff", "keys": [1], "scale": NaN}]}}',
        )
    if kind == 5:
        return "POST", "/api/translate", {"model": "m" * rng.choice([100, 5000]), "text": text}
    if kind == 6:
        return (
            "POST",
            "/api/translate",
            {"model": "transformer", "text": text, **{f"x{i}": i for i in range(rng.choice([10, 20_000]))}},
        )
    if kind == 7:
        return "GET", f"/api/jobs/{rng.choice(['nope', '0123456789ab'])}", None
    return "POST", "/api/memory", {"model": "transformer", "text": text}


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def slope_per_100(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of (requests served, MB), times 100."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return 100 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread if spread else 0.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def wait_for(url: str, server: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--invalid-share", type=float, default=0.4)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()

    database = Path(tempfile.mkdtemp()) / "soak.sqlite3"
    environment = {**os.environ, "MEMLENS_DATABASE": str(database), "MEMLENS_DEVICE": "cpu"}
    server = subprocess.Popen(
        [sys.executable, "-m", "memlens_cli.main", "serve", "--port", str(args.port)], cwd=ROOT, env=environment
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        wait_for(f"{base}/healthz", server)
        with httpx.Client(
            base_url=base, timeout=120
        ) as warm:  # load every model used once, so the start figure includes them
            for model in TRANSLATORS + WORKING_MEMORY:
                warm.post(
                    "/api/translate" if model in TRANSLATORS else "/api/memory",
                    json={"model": model, "text": "Ein Hund."},
                )
            warm.post("/api/ff/lens", json={"model": "language_model", "text": "The river"})
        start_mb = resident_mb(server.pid)
        statuses: Counter = Counter()
        latencies: dict[bool, list[float]] = {True: [], False: []}
        memory: list[tuple[int, float]] = [(0, start_mb)]
        lock = threading.Lock()
        stop_at = time.monotonic() + 60 * args.minutes

        def client(seed: int) -> None:
            rng = random.Random(seed)
            with httpx.Client(base_url=base, timeout=300) as http:
                while time.monotonic() < stop_at:
                    valid = rng.random() >= args.invalid_share
                    method, path, body = valid_request(rng) if valid else invalid_request(rng)
                    content = body if isinstance(body, str) else json.dumps(body) if body is not None else None
                    began = time.perf_counter()
                    try:
                        status = http.request(
                            method, path, content=content, headers={"content-type": "application/json"}
                        ).status_code
                    except httpx.HTTPError as error:
                        status = type(error).__name__
                    elapsed = time.perf_counter() - began
                    with lock:
                        statuses[status] += 1
                        latencies[valid].append(elapsed)
                        served = sum(statuses.values())
                        if served % 25 == 0:
                            memory.append((served, resident_mb(server.pid)))

        threads = [threading.Thread(target=client, args=(seed,)) for seed in range(args.clients)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - began
        end_mb = resident_mb(server.pid)
        served = sum(statuses.values())
        second_half = [p for p in memory if p[0] >= served / 2]

        in_flight = [
            threading.Thread(
                target=lambda: httpx.post(
                    f"{base}/api/attribution",
                    timeout=60,
                    json={
                        "model": "memtransformer_20",
                        "text": " ".join(d.source for d in demo_sentences()[:4]),
                        "position": 3,
                    },
                )
            )
            for _ in range(4)
        ]
        for thread in in_flight:
            thread.start()
        time.sleep(1.0)
        signalled = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
        exit_seconds = time.monotonic() - signalled

        print(
            f"{args.clients} clients, {elapsed / 60:.1f} minutes, {served} requests ({served / elapsed:.1f}/s), "
            f"{100 * args.invalid_share:.0f}% invalid by design"
        )
        print(
            "status counts: " + ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items(), key=str))
        )
        print(f"server errors (5xx): {sum(c for s, c in statuses.items() if isinstance(s, int) and s >= 500)}")
        for valid, name in ((True, "valid"), (False, "invalid")):
            times = latencies[valid]
            print(
                f"{name:8s} requests: {len(times):5d}  p50 {1000 * percentile(times, 0.5):8.1f} ms  "
                f"p95 {1000 * percentile(times, 0.95):8.1f} ms"
            )
        print(
            f"resident memory: {start_mb:.0f} MB at the start (models loaded), {end_mb:.0f} MB at the end; "
            f"slope {slope_per_100(memory):+.2f} MB per 100 requests over the run, "
            f"{slope_per_100(second_half):+.2f} over its second half"
        )
        print(
            f"SIGTERM with 4 attributions in flight: the server exited in {exit_seconds:.1f} s "
            f"(code {server.returncode})"
        )
    finally:
        if server.poll() is None:
            server.kill()


if __name__ == "__main__":
    main()
