"""A Hugging Face causal language model's live routes against transformers' own path, side by side in one run
(benchmarks/latency.py prints these rows after its own; this file runs them alone too).

For each route a reader takes on such a model (Explore open, a head ablation on Explore, an FF key edit, the logit
lens, the FF key browser ordered by effect as the page opens it) at inputs of 16 and 256 tokens, the median time of
the request (TestClient, in process, the trace cache off, so every request computes every run it shows) beside
transformers' own work for the same text: `generate` of the route's continuation budget with its key/value cache,
greedy, then one forward over the text and its continuation with `output_attentions=True`. "runs" is how many
continuations a request shows (the plain one, and the lesioned one); "x" = route ms / (runs x transformers ms). The
goal is x <= 2.

Models: SmolLM2-135M-Instruct where it is installed in the models folder (`memlens install-smollm2 --into
models`), and a tiny random Llama built by the suite's fixtures (tests/hugging_face_models.py), so that a machine
without the download measures the same path.

    python benchmarks/causal_lm_latency.py [--models-dir models] [--repeats 5] [--lengths 16 256]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the suite's fixtures (tests/) build the tiny Llama

import torch  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from app.main import create_app  # noqa: E402
from app.services.demo import demo_sentences  # noqa: E402
from app.services.model_thread import on_model_thread  # noqa: E402
from app.settings import Settings  # noqa: E402
from inference.core.family import LoadedModel  # noqa: E402
from inference.families.hugging_face.smollm2 import FOLDER_NAME as SMOLLM2  # noqa: E402
from tests.hugging_face_models import build_folder  # noqa: E402

TINY = "tiny_random_llama"
HTMX = {"HX-Request": "true"}


def text_within(loaded: LoadedModel, words: list[str], limit: int) -> str:
    """The longest run of `words` (from the first) that stays within `limit` tokens of the model's tokenizer."""
    n = 1
    while n < len(words) and len(loaded.tokenizer.encode(" ".join(words[: n + 1]))) <= limit:
        n += 1
    return " ".join(words[:n])


def english_text(loaded: LoadedModel, limit: int) -> str:
    """The longest run of the demo set's English words within `limit` tokens."""
    return text_within(loaded, " ".join(d.reference for d in demo_sentences()).split() * 40, limit)


def routes(model: str, budget: int) -> dict[str, tuple[int, Callable[[TestClient, str], object]]]:
    """name -> (continuations the request shows, the request)."""

    def post(path: str, **form: str) -> Callable[[TestClient, str], object]:
        def request(client: TestClient, text: str) -> object:
            answer = client.post(path, data={"model": model, "text": text, **form}, headers=HTMX)
            if answer.status_code != 200:
                raise RuntimeError(f"{path}: {answer.status_code} {answer.text[:200]}")
            return answer

        return request

    def lens(client: TestClient, text: str) -> object:
        answer = client.post("/api/ff/lens", json={"model": model, "text": text, "layer": 0})
        if answer.status_code != 200:
            raise RuntimeError(f"/api/ff/lens: {answer.status_code} {answer.text[:200]}")
        return answer

    def keys_by_effect(client: TestClient, text: str) -> object:
        params = {"model": model, "layer": 0, "order": "effect", "text": text}
        answer = client.get("/ff/keys", params=params, headers=HTMX)
        if answer.status_code != 200:
            raise RuntimeError(f"/ff/keys: {answer.status_code} {answer.text[:200]}")
        return answer

    return {
        "explore open": (1, post("/explore/run", new_tokens=str(budget))),
        "head ablation": (2, post("/explore/run", new_tokens=str(budget), ablate="layers.0.attn:1")),
        "ff key edit": (2, post("/ff/run", edits="layers.0.ff:3 x0")),
        "lens": (1, lens),
        "keys by effect": (1, keys_by_effect),  # the FF page's key browser as it opens
    }


def transformers_path(loaded: LoadedModel, text: str, budget: int) -> None:
    """transformers' own: generate with its cache, then one forward with attention weights over the stream."""
    hf = loaded.model.hf
    ids = torch.tensor([[loaded.config.bos_id, *loaded.tokenizer.encode(text)]], device=loaded.device)  # [1, t]
    with torch.no_grad():
        stream = hf.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=budget,
            min_new_tokens=budget,  # the same number of tokens as the route, EOS or not
            do_sample=False,
            pad_token_id=loaded.config.pad_id,
        )  # [1, t + budget]
        hf(input_ids=stream, output_attentions=True)


def median_ms(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def rows(models_dir: Path, repeats: int, lengths: list[int], device: str = "cpu") -> None:
    """Print the rows of every causal LM found (module doc)."""
    build_folder("llama", models_dir / TINY)
    settings = Settings(
        models_dirs=[models_dir], device=device, max_cache_mb=0, warm_up=False,
        database=Path(tempfile.mkdtemp(prefix="memlens-causal-")) / "jobs.sqlite3",
    )  # fmt: skip
    with TestClient(create_app(settings)) as client:
        gateway = client.app.state.gateway
        budget = gateway.limits.continuation(None)
        names = [name for name in (SMOLLM2, TINY) if name in gateway.registry.available()]
        if SMOLLM2 not in names:
            print(f"({SMOLLM2} is not in {models_dir}: `memlens install-smollm2 --into {models_dir}` adds its rows)")
        print(f"{'route':14} {'model':24} {'tokens':>6} {'new':>4} {'route ms':>9} {'runs':>4} {'hf ms':>8} {'x':>6}")
        for name in names:
            loaded = gateway.model(name)
            for limit in lengths:
                text = english_text(loaded, min(limit, gateway.token_limit(loaded) - budget))
                tokens = len(loaded.tokenizer.encode(text))
                peer = median_ms(partial(on_model_thread, partial(transformers_path, loaded, text, budget)), repeats)
                for route, (runs, request) in routes(name, budget).items():
                    request(client, text)  # the first request of a kind pays for what is built once (FF study)
                    ms = median_ms(partial(request, client, text), repeats)
                    print(f"{route:14} {name:24} {tokens:6d} {budget:4d} {ms:9.1f} {runs:4d} {peer:8.1f} "
                          f"{ms / (runs * peer):6.2f}", flush=True)  # fmt: skip


def causal_lm_rows(installed_models: Path, repeats: int, lengths: list[int], device: str = "cpu") -> None:
    """The rows, for SmolLM2 where `installed_models` holds it and for the tiny Llama (built in a scratch folder)."""
    with tempfile.TemporaryDirectory(prefix="memlens-causal-models-") as scratch:
        models = Path(scratch)
        installed = installed_models / SMOLLM2
        if installed.is_dir():
            (models / SMOLLM2).symlink_to(installed.resolve())
        rows(models, repeats, lengths, device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models-dir", type=Path, default=Path("models"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    causal_lm_rows(args.models_dir, args.repeats, args.lengths, args.device)


if __name__ == "__main__":
    main()
