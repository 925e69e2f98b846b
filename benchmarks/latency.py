"""Server time of every live route against the model work it needs, side by side in one run.

For each live route (a lesion toggle, a head ablation, an FF key edit, the lens, a memory mask, a segment
lesion, a state clamp, an attribution refresh, focus, compare) on the model its page opens on, at inputs of 16, 64
and 256 source tokens where the model reads text (a task model reads its own example), this prints the median
server time (each answer's Server-Timing header; TestClient, in process) with the trace cache off ("cold": every
request computes its plain run too) and on ("warm": the plain run cached by a first view, each timed request a new
lesion setting), beside the model work the route cannot avoid:

- "run ms": one plain run of the same input (`run_with_trace` with the logits only: one greedy decode of the
  route's budget and the forward that scores it, as /api/translate runs); for compare, one such run of each model;
  for a route that shows the logit lens (the FF key edit: the layer on view; the lens API), that run plus the
  lens's products, done the plain way on a trace of the lens's hooks: each shown layer's residual, FF output and
  layer output projected through the output embedding one by one, a full softmax and its top tokens, and the top
  keys (an every-layer lens at 253 tokens is 18 [253, d] x [d, vocab] products: about twice the model's forward on
  the CPU); "plain x" gives the warm ratio to the plain run alone;
  for a task route (segment knock-out, state clamp), the run its request cannot avoid: the same lesion's run (the
  slots knocked out, the gate clamped), traced with the hooks its views read (the attention patterns, with their
  masks where the model carries memory; the state's steps and gates) as the route traces them; "plain x" gives
  the warm ratio to the logits-only run without the lesion;
  for focus, Captum's IntegratedGradients called the plain way on the same output, steps and model (every
  (output, path point) pair its own row of the model), the peer the route's attribution replaces; for the
  attribution refresh, its Captum call (`inference.runs.attribution.attribute`: the decode, integrated gradients
  of 32 steps and saliency) called directly;
- "runs": how many of those a cold request needs: a route that shows a lesion against the plain run needs both (2);
  compare needs each model's run twice with the cache off (its rows' own requests, then the figure's, which with the
  cache on reuses them); warm, the plain run is cached and one is needed.

Compare is timed as a browser loads it: the table, then each row's request and the figure's. After the routes, the
Compare page on every translator it offers: when its first row arrives and when its last does (medians of 3 loads).

"cold x" = cold ms / (runs x run ms), "warm x" = warm ms / run ms; for the lens, whose cold request needs the lens
run and a plain run without the lens's products, cold x = cold ms / (run ms + the plain run's ms), and "plain x" =
warm ms / the plain run alone. Every request of a route asks a different lesion setting, so no timed request is
answered from the cache whole. Then a lesion sweep of three models (a job each: BLEU at every memory size on the demo
set) against the same translations run one memory size at a time, directly, five times each in turns.

Last, a Hugging Face causal LM's routes against transformers' own generate and forward (SmolLM2-135M where
`--models-dir` holds it, and a tiny random Llama): benchmarks/causal_lm_latency.py, route "causal".

    python benchmarks/latency.py [--device cpu|cuda] [--repeats 7] [--lengths 16 64 256] [--routes toggle ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from html.parser import HTMLParser
from pathlib import Path

import torch
from causal_lm_latency import causal_lm_rows, text_within
from fastapi.testclient import TestClient

from app.main import create_app
from app.middleware.server_timing import TIMING
from app.services.demo import demo_sentences
from app.services.focus import MAX_ATTRIBUTED_OUTPUTS
from app.services.gateway import ModelGateway, RunLimits
from app.services.gating import offered
from app.services.model_thread import on_model_thread, splits_over_cpu_threads
from app.services.pages import COMPARE
from app.services.segments import segment_hooks
from app.settings import Settings
from inference.analyses.ff_values import ff_memories
from inference.analyses.quality import corpus_quality
from inference.analyses.state import state_hooks
from inference.core.capabilities import Capability
from inference.core.family import LoadedModel, capabilities_of
from inference.core.ff_memories import FFMemories
from inference.core.hook_names import LOGITS, ff_keys, ff_output
from inference.core.hooks import hook_points
from inference.core.interventions import Interventions, KnockoutSlots, MemorySize
from inference.core.trace import Trace
from inference.core.tracing import encode_sources, run_with_trace
from inference.runs.attribution import attribute
from inference.runs.source_attribution import embedded_as
from inference.runs.translate import BATCH_SIZE, translate_all

HTMX = {"HX-Request": "true"}
FOCUS_STEPS = 16  # the Focus page's default
LENS_TOP = 5  # the lens's top keys and top tokens by default
TIMED_SECONDS = 1.0  # a fast route or run is timed over at least this long
MAX_REPEATS = 51
TURN = 3  # samples of one kind in a row (interleaved_ms)
JOB_POLL_SECONDS = 0.1  # each poll a request: polling every 20 ms took CPU from the job it waited for
COMPARED = ["transformer", "memtransformer_10"]
SWEPT = ["memtransformer_10", "memtransformer_20", "memtransformer_5"]
SWEEP_REPEATS = 5  # a sweep's job and its single runs, in turns (medians of 3 moved by a fifth between runs)
SIZES = [0, 2, 5, 15, 20, 30, 25, 1]  # memory sizes a toggle tries: none the model's own 10
Form = Callable[[str, int], dict]  # (input text, request number) -> the route's form or JSON body


@dataclass(frozen=True)
class Route:
    name: str
    model: str
    path: str
    body: Form
    json: bool = False  # a JSON body (the API), else an htmx form post
    reads_text: bool = True  # False: a task model, timed on its own example only
    cold_runs: int = 2  # the runs a cold request cannot avoid: the plain run and the lesioned one
    settings: int = 8  # distinct lesion settings its requests take in turn (the first, untimed, takes the last)
    lens: str = ""  # "one layer" or "every layer": the route shows the logit lens of the edited run
    traced: Callable[[LoadedModel], list[str]] | None = None  # the hooks a task route's views read, as it traces them
    lesion: Callable[[int], Interventions] | None = None  # a task route's lesion in request i, as its form asks it


def cycle(values: list, i: int):
    return values[i % len(values)]


def knocked_out(i: int) -> list[int]:
    """Request i's memory slots knocked out: every nonempty set of the 8 slots in turn."""
    return [j for j in range(8) if (i + 1) >> j & 1]


def clamped(i: int) -> float:
    """Request i's update gate value: 1,000 values in turn."""
    return i % 1000 / 1000


def segment_view_hooks(loaded: LoadedModel) -> list[str]:
    return segment_hooks(Capability.MEMORY_TOKENS in capabilities_of(loaded.config))


def state_view_hooks(loaded: LoadedModel) -> list[str]:
    return state_hooks(list(hook_points(loaded.model)))


ROUTES = [
    Route("toggle", "memtransformer_10", "/explore/run",
          lambda text, i: {"text": text, "lesion": "memory_size", "memory_size.size": cycle(SIZES, i),
                           "stack": "encoder.attn"}),
    Route("head ablation", "memtransformer_10", "/explore/run",
          lambda text, i: {"text": text, "ablate": f"decoder.layers.{i % 4}.cross_attn:{i % 8}",
                           "stack": "decoder.cross_attn"}),
    Route("attribution", "memtransformer_10", "/explore/attribution",
          lambda text, i: {"text": text, "position": 0, "lesion": "memory_size", "memory_size.size": cycle(SIZES, i)},
          cold_runs=1),
    Route("memory mask", "working_memory_de_en", "/memory/run",
          lambda text, i: {"text": text, "lesion": ["mask_memory", "memory_size"],
                           "memory_size.size": cycle([0, 1, 2, 3, 4, 5, 6, 7], i)}),
    Route("FF key edit", "language_model", "/ff/run",
          lambda text, i: {"text": text, "edits": f"layers.{i % 6}.ff:{i % 512},{(i + 7) % 512} x0"},
          lens="one layer", settings=512),  # the layer on view: the form's default, 0
    Route("lens", "language_model", "/api/ff/lens",
          lambda text, i: {"text": text, "layer": i % 6, "interventions": [
              {"kind": "scale", "hook": f"layers.{i % 6}.ff.keys", "axis": "ff_key", "index": [i % 512], "factor": 0}]},
          json=True, lens="one layer", settings=512),  # as the page reads it
    Route("lens, every layer", "language_model", "/api/ff/lens",
          lambda text, i: {"text": text, "interventions": [
              {"kind": "scale", "hook": f"layers.{i % 6}.ff.keys", "axis": "ff_key", "index": [i % 512], "factor": 0}]},
          json=True, lens="every layer", settings=512),
    Route("segment knock-out", "rmt_copy", "/segments/run",
          lambda text, i: {"text": text, "lesion": "knockout_slots", "knockout_slots.slots": knocked_out(i)},
          reads_text=False, settings=255, traced=segment_view_hooks,
          lesion=lambda i: Interventions.of(KnockoutSlots(slots=tuple(knocked_out(i))))),
    Route("state clamp", "neural_gpu_addition", "/state/run",
          lambda text, i: {"text": text, "lesion": "clamp_gate", "clamp_gate.gate": "update",
                           "clamp_gate.value": clamped(i)}, reads_text=False,
          settings=1000, traced=state_view_hooks,
          lesion=lambda i: Interventions.model_validate(
              [{"kind": "clamp_gate", "gate": "update", "value": clamped(i)}])),
    Route("focus", "extended_neural_gpu_de_en", "/focus/run",
          lambda text, i: {"text": text, "steps": FOCUS_STEPS}, cold_runs=1),  # nothing cached: cold and warm alike
    Route("compare", "transformer", "/compare/run",
          lambda text, i: {"text": text, "models": COMPARED}),  # cold: the rows' runs, then the figure's; warm: cached
]  # fmt: skip


def text_of_tokens(loaded: LoadedModel, limit: int) -> str:
    """The longest run of demo-set words that stays within `limit` source tokens."""
    return text_within(loaded, " ".join(d.source for d in demo_sentences()).split() * 30, limit)


@dataclass(frozen=True)
class Timed:
    """What is timed: seconds_of(i) times sample i (a request with the i-th setting, or a run)."""

    seconds_of: Callable[[int], float]
    most: int = MAX_REPEATS  # samples at most: a route's distinct settings after its first (none answered whole)


def interleaved_ms(timed: dict[str, Timed], repeats: int) -> dict[str, float]:
    """Median ms of each, sampled in turns of TURN samples each while any has fewer than `repeats` samples or,
    below its `most`, under TIMED_SECONDS of them (a median of 7 requests of 10 ms moved by a fifth from one run to
    the next). The machine's speed drifts (a median moved by 20-30% from one process to the next on a shared 2-core
    VM); in turns, it weighs on a route and on the work it is compared with alike. A turn's first run starts on
    what the requests before it left in the caches; the rest of its TURN runs go back to back."""
    times: dict[str, list[float]] = {name: [] for name in timed}

    def more(name: str) -> bool:
        return len(times[name]) < timed[name].most

    def wanted(name: str) -> bool:
        return more(name) and (len(times[name]) < repeats or sum(times[name]) < TIMED_SECONDS)

    while any(map(wanted, timed)):
        for name, sample in timed.items():
            for _ in range(TURN):
                if more(name):
                    times[name].append(sample.seconds_of(len(times[name])))
    return {name: statistics.median(samples) * 1e3 for name, samples in times.items()}


def model_work(run: Callable[[int], object], one_cpu_thread: bool = False) -> Timed:
    """run(i) timed on the model thread, where the routes' runs go too: timed on another thread, a run pays for a
    second OpenMP team (app/services/model_thread.py), and so would every route's run after it. `one_cpu_thread`:
    where the gateway runs a model too small to split (on a thread of one CPU thread, this one)."""

    def seconds_of(i: int) -> float:
        start = time.perf_counter()
        on_model_thread(lambda: run(i), one_cpu_thread)
        return time.perf_counter() - start

    return Timed(seconds_of)


class Refused(Exception):
    """The route refuses this input (a 4xx: e.g. longer than focus attributes)."""


class LoadTriggered(HTMLParser):
    """The requests an htmx answer makes when it is swapped in: (path, fields) of every element with
    hx-trigger="load" (a comparison's rows and its figure)."""

    def __init__(self):
        super().__init__()
        self.requests: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("hx-trigger") == "load" and a.get("hx-post"):
            self.requests.append((a["hx-post"], json.loads(a.get("hx-vals") or "{}")))


def checked(route: Route, response):
    if 400 <= response.status_code < 500:
        raise Refused(response.text[:120])
    if response.status_code != 200:
        raise RuntimeError(f"{route.name}: {response.status_code} {response.text[:300]}")
    return response


def loads_of(response) -> list[tuple[str, dict]]:
    parser = LoadTriggered()
    parser.feed(response.text)
    return parser.requests


def server_seconds(response) -> float:
    """The server's time for the answer, from its Server-Timing header (app/middleware/server_timing.py)."""
    name, duration = response.headers["server-timing"].split(";dur=")
    assert name == TIMING
    return float(duration) / 1e3


def route_requests(client: TestClient, route: Route, text: str) -> Timed:
    """The route's request and whatever its answer loads when swapped in, one after another (as the server, running
    one model at a time, answers them), each request's time as its Server-Timing header gives it: not the test
    client's own time around it (about 1.5 ms a request on 2 cores). A first request, untimed, loads the model and,
    with the cache on, leaves the plain run a first view leaves."""

    def post(path: str, body: dict) -> tuple[object, float]:
        response = client.post(path, json=body) if route.json else client.post(path, data=body, headers=HTMX)
        return checked(route, response), server_seconds(response)

    def send(i: int) -> float:
        response, seconds = post(route.path, {"model": route.model, **route.body(text, i)})
        for path, fields in [] if route.json else loads_of(response):
            seconds += post(path, fields)[1]
        return seconds

    client.app.state.gateway._recent.clear()
    send(route.settings - 1)
    return Timed(send, min(route.settings - 1, MAX_REPEATS))  # none of them the first's setting


def route_budget(route: Route, loaded: LoadedModel, limits: RunLimits) -> int:
    """The new tokens the route's plain run decodes: a language model's continuation on the FF page, the outputs
    focus attributes, else the translation limit."""
    if Capability.GENERATES_TEXT in capabilities_of(loaded.config):
        return limits.continuation_tokens
    if route.path == "/focus/run":
        return min(limits.max_new_tokens, MAX_ATTRIBUTED_OUTPUTS)
    return limits.max_new_tokens


def plain_run(loaded: LoadedModel, text: str, max_new_tokens: int) -> Timed:
    """The plain run (traced with the logits only), where the gateway runs it."""
    return model_work(
        lambda i: run_with_trace(loaded, text, names=[LOGITS], max_new_tokens=max_new_tokens),
        not splits_over_cpu_threads(loaded.model),
    )


def captum_whole_output(loaded: LoadedModel, text: str, max_new_tokens: int, n_steps: int) -> None:
    """The peer of the Focus page's attribution: Captum's IntegratedGradients of every output token of the greedy
    output onto the embedded source, called the plain way (one row of the model per (output, path point) pair)."""
    from captum.attr import IntegratedGradients

    embedding = loaded.family.source_embedding(loaded.model)
    greedy = run_with_trace(loaded, text, names=[LOGITS], max_new_tokens=max_new_tokens)
    targets = greedy.output_ids[0]
    src_ids = encode_sources(loaded, [text])  # [1, n]
    tgt_in = torch.tensor([[loaded.config.bos_id] + targets[:-1]])  # [1, t]
    rows = len(targets)

    def chosen_logit(embedded: torch.Tensor, position: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        k = embedded.shape[0]  # [k, n, e] -> [k]
        with embedded_as(embedding, embedded):
            logits = loaded.model(src_ids.expand(k, -1), tgt_in.expand(k, -1))  # [k, t, vocab]
        return logits[torch.arange(k), position, token]

    with torch.no_grad():
        source = embedding(src_ids).expand(rows, -1, -1).contiguous()  # [t, n, e]
    IntegratedGradients(chosen_logit).attribute(
        source,
        baselines=torch.zeros_like(source),
        additional_forward_args=(torch.arange(rows), torch.tensor(targets)),
        n_steps=n_steps,
        internal_batch_size=32,
    )


def plain_lens(loaded: LoadedModel, memories: FFMemories, text: str, max_new_tokens: int, layer: int | None) -> None:
    """The lens route's own work done the plain way: a trace of the lens's hooks, then for each shown layer its
    streams' logits (one product each), a full softmax, the top tokens, and the top keys by m_i ||v_i||
    (`memories` read from the weights beforehand, as the server keeps them)."""
    layers = memories.layers if layer is None else [memories.layers[layer]]
    trace = run_with_trace(loaded, text, names=[LOGITS, *memories.capture_hooks()], max_new_tokens=max_new_tokens)
    for name in layers:
        m, r, y = (trace.tensor(hook)[0].float() for hook in (ff_keys(name), memories.residual_hook(name),
                                                              ff_output(name)))  # fmt: skip
        (m * memories.values[name].norm(dim=-1)).topk(LENS_TOP)
        for logits in (
            memories.stream_logits(r),
            y @ memories.output_embedding.T,
            memories.stream_logits(memories.layer_output(name, r, y)),
        ):
            torch.softmax(logits, dim=-1).topk(LENS_TOP)


def reference(route: Route, gateway: ModelGateway, text: str) -> Timed:
    """The model work the route is compared with (the module's docstring says which, per route)."""
    loaded = gateway.model(route.model)
    budget = route_budget(route, loaded, gateway.limits)
    if route.lens:
        layer = None if route.lens == "every layer" else route.body(text, 0).get("layer", 0)
        memories = ff_memories(loaded.model)
        return model_work(lambda i: plain_lens(loaded, memories, text, budget, layer))
    if route.path == "/focus/run":
        return model_work(lambda i: captum_whole_output(loaded, text, budget, FOCUS_STEPS))
    if route.path == "/explore/attribution":
        return model_work(lambda i: attribute(loaded, text, 0))
    if route.path == "/compare/run":
        runs = [plain_run(gateway.model(name), text, budget) for name in COMPARED]
        return Timed(lambda i: sum(run.seconds_of(i) for run in runs))
    if route.traced is not None:
        return lesioned_runs(route, loaded, text, budget)
    return plain_run(loaded, text, budget)


def lesioned_runs(route: Route, loaded: LoadedModel, text: str, max_new_tokens: int) -> Timed:
    """A task route's lesioned runs, request i's lesion in run i, traced with the hooks its views read, where the
    gateway runs them."""
    assert route.traced is not None and route.lesion is not None
    names, lesion = route.traced(loaded), route.lesion

    def run(i: int) -> Trace:
        return run_with_trace(loaded, text, names=names, interventions=lesion(i), max_new_tokens=max_new_tokens)

    return model_work(run, not splits_over_cpu_threads(loaded.model))


def sweep_rows(client: TestClient, model: str, repeats: int) -> None:
    """A lesion sweep through the API (BLEU at every memory size on the demo set) against the same corpus
    translated at each of those sizes directly, one after another; the model loaded before either, as on a server
    that has shown it once (a job that loads its model took 0.75 s where one that found it loaded took 0.68). The
    job's time is its run as the job reports it (`seconds`: from its worker's claim to its end, the results
    written); the client's wait for the first, polling, is shown beside. The sweep runs `repeats` times in turns
    with the single runs (the API answers a finished identical sweep with its result: each later one is queued
    in the job store as the API queues the first)."""
    loaded = client.app.state.gateway.model(model)
    start = time.perf_counter()
    first = finished_job(client, client.post("/api/sweeps", json={"model": model, "reference": "demo"}).json())
    waited = time.perf_counter() - start
    runner = client.app.state.jobs
    params = runner.store.get(first["id"]).params
    sizes = first["result"]["memory_size"]

    def job_seconds(i: int) -> float:
        if i == 0:
            return first["seconds"]
        job = runner.store.create("sweep", params, total=len(sizes))
        runner.worker.wake()
        return finished_job(client, {"id": job.id, "status": job.status})["seconds"]

    sources = [d.source for d in demo_sentences()]
    references = [d.reference for d in demo_sentences()]

    def single_seconds(i: int) -> float:
        start = time.perf_counter()
        for size in sizes:  # on the model thread, as the job's batches run: translate all, then score
            at_size = Interventions.of(MemorySize(size=size))
            translated = on_model_thread(
                partial(translate_all, loaded.model, loaded.tokenizer, sources, BATCH_SIZE, at_size)
            )
            corpus_quality(translated, references)
        return time.perf_counter() - start

    timed = {"job": Timed(job_seconds, repeats), "single": Timed(single_seconds, repeats)}
    medians = interleaved_ms(timed, repeats)
    job_s, single_s = medians["job"] / 1e3, medians["single"] / 1e3
    print(f"\nlesion sweep of {model} over {len(sizes)} memory sizes on {len(sources)} demo sentences, medians of "
          f"{repeats}: the job {job_s:.2f} s (the client waited {waited:.2f} s for the first), {len(sizes)} single "
          f"runs {single_s:.2f} s; ratio {job_s / single_s:.2f}", flush=True)  # fmt: skip


def finished_job(client: TestClient, job: dict) -> dict:
    """The job as /api/jobs gives it once it has ended, polled every JOB_POLL_SECONDS; a failed one raises."""
    while job["status"] not in ("done", "failed"):
        time.sleep(JOB_POLL_SECONDS)
        job = client.get(f"/api/jobs/{job['id']}").json()
    if job["status"] != "done":
        raise RuntimeError(f"the sweep failed: {job}")
    return job


def compare_streaming(client: TestClient, text: str, repeats: int = 3) -> None:
    """The Compare page on every model it offers, the trace cache off: when the first row arrives (the table, then
    the first row's own request) and when the last does, medians of `repeats` loads, against the first model's
    plain run."""
    gateway = client.app.state.gateway
    models = offered(gateway, COMPARE)
    for name in models:
        gateway.model(name)  # loaded, as on a server that has shown them once

    def rows_arrived() -> list[float]:
        start = time.perf_counter()
        table = client.post("/compare/run", data={"models": models, "text": text}, headers=HTMX)
        arrived = []
        for path, fields in loads_of(table):
            if path == "/compare/row":
                assert client.post(path, data=fields, headers=HTMX).status_code == 200
                arrived.append(time.perf_counter() - start)
        return arrived

    loads = [rows_arrived() for _ in range(repeats)]
    first, last = (statistics.median(load[i] for load in loads) * 1e3 for i in (0, -1))
    run = interleaved_ms({"run": plain_run(gateway.model(models[0]), text, gateway.limits.max_new_tokens)}, 3)["run"]
    print(f"\ncompare on {len(models)} models, medians of {repeats} loads: first row after {first:.0f} ms "
          f"({models[0]}'s plain run {run:.0f} ms), all rows after {last:.0f} ms", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256])  # focus attributes up to 24
    parser.add_argument("--routes", nargs="+", default=[*(route.name for route in ROUTES), "sweep", "causal"])
    parser.add_argument("--models-dir", type=Path, default=Path("models"), help="where SmolLM2 is installed")
    args = parser.parse_args()
    chosen = [route for route in ROUTES if route.name in args.routes]
    print(f"device {args.device}, medians of at least {args.repeats} requests; the model work each route is compared "
          "with: see the docstring (python benchmarks/latency.py --help)")  # fmt: skip
    columns = ("run ms", "runs", "cold ms", "cold x", "warm ms", "warm x", "plain x")
    print(f"{'route':18} {'model':26} {'tokens':>6} " + " ".join(f"{c:>8}" for c in columns))
    jobs = Path(tempfile.mkdtemp(prefix="memlens-latency-"))  # a new job store: no sweep is found done already
    clients = {
        cache: TestClient(
            create_app(
                Settings(
                    device=args.device,
                    max_cache_mb=512 if cache == "warm" else 0,
                    warm_up=False,
                    database=jobs / f"{cache}.sqlite3",
                )
            )
        )
        for cache in ("cold", "warm")
    }
    for client in clients.values():
        client.__enter__()
    try:
        gateway = clients["cold"].app.state.gateway
        for route in chosen:
            loaded = gateway.model(route.model)
            inputs = (
                [
                    (len(loaded.tokenizer.encode(text_of_tokens(loaded, n))), text_of_tokens(loaded, n))
                    for n in args.lengths
                ]
                if route.reads_text
                else [(None, gateway.registry.entries[route.model].record.example)]
            )
            for tokens, text in inputs:
                shown = "task" if tokens is None else str(tokens)
                try:
                    timed = {cache: route_requests(client, route, text) for cache, client in clients.items()}
                except Refused as refused:
                    print(f"{route.name:18} {route.model:26} {shown:>6} refused: {refused}", flush=True)
                    continue
                timed["run"] = reference(route, gateway, text)
                apart = bool(route.lens or route.traced)  # compared with more than the plain run: shown beside it
                if apart:
                    timed["plain"] = plain_run(loaded, text, route_budget(route, loaded, gateway.limits))
                medians = interleaved_ms(timed, args.repeats)
                cold, warm, run = medians["cold"], medians["warm"], medians["run"]
                plain = medians.get("plain", run)
                second = plain if route.lens else run  # a cold lens: the lens run and a plain one
                cold_x = cold / (run + (route.cold_runs - 1) * second)
                print(f"{route.name:18} {route.model:26} {shown:>6} {run:8.1f} {route.cold_runs:8d} {cold:8.1f} "
                      f"{cold_x:8.2f} {warm:8.1f} {warm / run:8.2f} {f'{warm / plain:8.2f}' if apart else ''}",
                      flush=True)  # fmt: skip
        if "compare" in args.routes:
            compare_streaming(clients["cold"], demo_sentences()[0].source)
        if "sweep" in args.routes:
            for model in SWEPT:
                sweep_rows(clients["cold"], model, SWEEP_REPEATS)
    finally:
        for client in clients.values():
            client.__exit__(None, None, None)
    if "causal" in args.routes:
        causal_lm_rows(args.models_dir, args.repeats, [16, 256], args.device)


if __name__ == "__main__":
    main()
