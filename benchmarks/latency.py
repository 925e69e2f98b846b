"""Server time of a live lesion toggle against a plain translation.

Prints the median server time of
  a lesion toggle: POST /explore/run with a new memory size (re-runs the
                   model with and without the lesion, builds the attention
                   heatmap, the head grid and the block summary, renders the fragment);
  a plain translate: POST /api/translate of the same sentence;
and their ratio. The trace cache is off so every request computes.

    python benchmarks/latency.py [--model memtransformer_10] [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

from fastapi.testclient import TestClient

from app.main import create_app
from app.services.demo import demo_sentences
from app.settings import Settings


def median_ms(send, repeats: int) -> float:
    send(-1)  # warm-up: loads the model
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        response = send(i)
        times.append(time.perf_counter() - start)
        response.raise_for_status()
    return statistics.median(times) * 1e3


def text_of_tokens(tokenizer, limit: int) -> str:
    """The longest run of demo-set words that stays within `limit` tokens."""
    words = " ".join(d.source for d in demo_sentences()).split() * 20
    n = 1
    while len(tokenizer.encode(" ".join(words[: n + 1]))) <= limit:
        n += 1
    return " ".join(words[:n])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="memtransformer_10")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    sentence = demo_sentences()[0].source
    with TestClient(create_app(Settings(device="cpu", max_cache_mb=0))) as client:
        trained = client.get("/api/models").json()
        memory = next(m["config"]["memory_size"] for m in trained["models"] if m["name"] == args.model)
        sizes = [k for k in range(3 * memory + 1) if k != memory]

        def toggle(i: int):
            form = {
                "model": args.model,
                "text": sentence,
                "memory_size": sizes[i % len(sizes)],
                "stack": "encoder.attn",
                "layer": 0,
                "head": 0,
            }
            return client.post("/explore/run", data=form, headers={"HX-Request": "true"})

        def translate(i: int):
            return client.post("/api/translate", json={"model": args.model, "text": sentence})

        lesion_ms = median_ms(toggle, args.repeats)
        plain_ms = median_ms(translate, args.repeats)
        # A long input: 256 source tokens, the server's limit.
        loaded = client.app.state.gateway.model(args.model)
        long_text = text_of_tokens(loaded.tokenizer, 256)

        def long_toggle(i: int):
            form = {
                "model": args.model,
                "text": long_text,
                "memory_size": sizes[i % len(sizes)],
                "stack": "encoder.attn",
                "layer": 0,
                "head": 0,
            }
            return client.post("/explore/run", data=form, headers={"HX-Request": "true"})

        long_ms = median_ms(long_toggle, max(3, args.repeats // 3))
    print(f"model {args.model}, sentence: {sentence!r}, {args.repeats} runs each, medians")
    print(f"lesion toggle (re-run with and without lesion + 3 figures): {lesion_ms:7.1f} ms")
    print(f"plain translate:                                           {plain_ms:7.1f} ms")
    print(f"lesion toggle / plain translate: {lesion_ms / plain_ms:.2f}")
    print(f"lesion toggle on a 256-token input: {long_ms:7.1f} ms")


if __name__ == "__main__":
    main()
