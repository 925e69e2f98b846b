"""Server time of every live route against the model run it needs, side by side in one run.

For each live route (a lesion toggle, a head ablation, an FF key edit, the lens, a memory mask, a segment
lesion, a state clamp, an attribution refresh, focus, compare) on the model its page opens on, at inputs of 16, 64
and 256 source tokens where the model reads text (a task model reads its own example), this prints the median
server time (TestClient, in process) with the trace cache off ("cold": every request computes its plain run too)
and on ("warm": the plain run cached by a first view, each timed request a new lesion setting), the median time of
the plain model run on the same input (`run_with_trace` with the logits only: one greedy decode of the route's
budget, the forward that scores it, as /api/translate runs), and the ratios. Every request of a route asks a
different lesion setting, so no timed request is answered from the cache whole.

    python benchmarks/latency.py [--device cpu|cuda] [--repeats 7] [--lengths 16 64 256] [--routes toggle ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from fastapi.testclient import TestClient

from app.main import create_app
from app.services.demo import demo_sentences
from app.services.focus import MAX_ATTRIBUTED_OUTPUTS
from app.services.gateway import RunLimits
from app.settings import Settings
from inference.core.capabilities import Capability
from inference.core.family import capabilities_of
from inference.core.hook_names import LOGITS
from inference.core.loaded_model import LoadedModel
from inference.core.tracing import run_with_trace

HTMX = {"HX-Request": "true"}
Form = Callable[[str, int], dict]  # (input text, request number) -> the route's form or JSON body


@dataclass(frozen=True)
class Route:
    name: str
    model: str
    path: str
    body: Form
    json: bool = False  # a JSON body (the API), else an htmx form post
    reads_text: bool = True  # False: a task model, timed on its own example only


def cycle(values: list, i: int):
    return values[i % len(values)]


ROUTES = [
    Route("toggle", "memtransformer_10", "/explore/run",
          lambda text, i: {"text": text, "memory_size": cycle([0, 2, 5, 15, 20, 30], i), "stack": "encoder.attn"}),
    Route("head ablation", "memtransformer_10", "/explore/run",
          lambda text, i: {"text": text, "ablate": f"decoder.layers.{i % 4}.cross_attn:{i % 8}",
                           "stack": "decoder.cross_attn"}),
    Route("attribution", "memtransformer_10", "/explore/attribution",
          lambda text, i: {"text": text, "position": 0, "memory_size": cycle([0, 2, 5, 15, 20, 30], i)}),
    Route("memory mask", "working_memory_de_en", "/memory/run",
          lambda text, i: {"text": text, "mask_memory": "true", "memory_size": cycle([0, 1, 2, 3, 4, 6], i)}),
    Route("FF key edit", "language_model", "/ff/run",
          lambda text, i: {"text": text, "edits": f"layers.{i % 6}.ff:{i % 512},{(i + 7) % 512} x0"}),
    Route("lens", "language_model", "/api/ff/lens",
          lambda text, i: {"text": text, "interventions": [
              {"kind": "scale", "hook": f"layers.{i % 6}.ff.keys", "axis": "ff_key", "index": [i % 512], "factor": 0}]},
          json=True),
    Route("segment knock-out", "rmt_copy", "/segments/run",
          lambda text, i: {"text": text, "knockout": [i % 5]}, reads_text=False),
    Route("state clamp", "neural_gpu_addition", "/state/run",
          lambda text, i: {"text": text, "clamp": "update", "clamp_value": cycle([0.0, 0.25, 0.5, 0.75, 1.0], i)},
          reads_text=False),
    Route("focus", "extended_neural_gpu_de_en", "/focus/run",
          lambda text, i: {"text": text, "steps": cycle([8, 16, 32, 64], i)}),
    Route("compare", "transformer", "/compare/run",
          lambda text, i: {"text": text, "models": ["transformer", "memtransformer_10"]}),  # warm: all cached
]  # fmt: skip


def text_of_tokens(loaded: LoadedModel, limit: int) -> str:
    """The longest run of demo-set words that stays within `limit` source tokens."""
    words = " ".join(d.source for d in demo_sentences()).split() * 30
    n = 1
    while n < len(words) and len(loaded.tokenizer.encode(" ".join(words[: n + 1]))) <= limit:
        n += 1
    return " ".join(words[:n])


def median_ms(run: Callable[[int], object], repeats: int) -> float:
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        run(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


class Refused(Exception):
    """The route refuses this input (a 4xx: e.g. longer than focus attributes)."""


def route_ms(client: TestClient, route: Route, text: str, repeats: int) -> float:
    def send(i: int):
        body = {"model": route.model, **route.body(text, i)}
        response = (
            client.post(route.path, json=body) if route.json else client.post(route.path, data=body, headers=HTMX)
        )
        if 400 <= response.status_code < 500:
            raise Refused(response.text[:120])
        if response.status_code != 200:
            raise RuntimeError(f"{route.name}: {response.status_code} {response.text[:300]}")
        return response

    client.app.state.gateway._recent.clear()
    send(10_000)  # loads the model and, with the cache on, the plain run a first view leaves (no timed request's)
    return median_ms(lambda i: send(i), repeats)


def route_budget(route: Route, loaded: LoadedModel, limits: RunLimits) -> int:
    """The new tokens the route's plain run decodes: a language model's continuation on the FF page, the outputs
    focus attributes, else the translation limit."""
    if Capability.GENERATES_TEXT in capabilities_of(loaded.config):
        return limits.continuation_tokens
    if route.path == "/focus/run":
        return min(limits.max_new_tokens, MAX_ATTRIBUTED_OUTPUTS)
    return limits.max_new_tokens


def plain_ms(loaded: LoadedModel, text: str, repeats: int, max_new_tokens: int) -> float:
    run_with_trace(loaded, text, names=[LOGITS], max_new_tokens=max_new_tokens)
    return median_ms(lambda i: run_with_trace(loaded, text, names=[LOGITS], max_new_tokens=max_new_tokens), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256])  # focus attributes up to 24
    parser.add_argument("--routes", nargs="+", default=[route.name for route in ROUTES])
    args = parser.parse_args()
    chosen = [route for route in ROUTES if route.name in args.routes]
    print(f"device {args.device}, medians of {args.repeats} requests; ratio = route / plain run of the same input")
    columns = ("plain ms", "cold ms", "cold x", "warm ms", "warm x")
    print(f"{'route':18} {'model':26} {'tokens':>6} " + " ".join(f"{c:>9}" for c in columns))
    clients = {
        warm: TestClient(create_app(Settings(device=args.device, max_cache_mb=512 if warm else 0)))
        for warm in (False, True)
    }
    for client in clients.values():
        client.__enter__()
    try:
        for route in chosen:
            loaded = clients[False].app.state.gateway.model(route.model)
            budget = route_budget(route, loaded, clients[False].app.state.gateway.limits)
            inputs = (
                [
                    (len(loaded.tokenizer.encode(text_of_tokens(loaded, n))), text_of_tokens(loaded, n))
                    for n in args.lengths
                ]
                if route.reads_text
                else [(None, clients[False].app.state.gateway.registry.entries[route.model].meta["example"])]
            )
            for tokens, text in inputs:
                shown = "task" if tokens is None else str(tokens)
                try:
                    cold = route_ms(clients[False], route, text, args.repeats)
                    warm = route_ms(clients[True], route, text, args.repeats)
                except Refused as refused:
                    print(f"{route.name:18} {route.model:26} {shown:>6} refused: {refused}", flush=True)
                    continue
                plain = plain_ms(loaded, text, args.repeats, budget)
                print(f"{route.name:18} {route.model:26} {shown:>6} {plain:9.1f} {cold:9.1f} {cold / plain:9.2f} "
                      f"{warm:9.1f} {warm / plain:9.2f}", flush=True)  # fmt: skip
    finally:
        for client in clients.values():
            client.__exit__(None, None, None)


if __name__ == "__main__":
    main()
