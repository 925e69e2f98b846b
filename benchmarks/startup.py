"""Start-up as a user meets it, on a real `memlens serve` over the shipped checkpoints, side by side in one run.

Prints:
- how long after launch `/healthz` first answers, how long until it reports every model scanned, and until it
  reports the background warm-up done;
- for every page a user opens from the navigation, the first request after start-up against a warm one: the
  page itself, then the run its form sends on load (the form serialised as htmx sends it: its named fields,
  the checked boxes, every select's chosen option), the same page and run again (the median of five), and the
  ratio;
- each `memlens` command's wall time beside a fresh Python process doing the same work without the command line
  (the same imports, loading the checkpoint and running it), and the difference: the command's own overhead.

    python benchmarks/startup.py [--port 8766] [--at-scan]

The pages are first opened once the warm-up has ended, as the start-up goal reads ("warm what is needed in the
background at start-up; the page usable meanwhile"); `--at-scan` opens them as soon as the scan has ended, racing
the warm-up (a user who opens a page at once: it is usable, and waits for what the warm-up is doing).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

import httpx
from latency import loads_of  # benchmarks/latency.py, beside this file

ROOT = Path(__file__).resolve().parent.parent
HTMX = {"HX-Request": "true"}
WARM_REPEATS = 5  # a warm page and run: the median of this many (the first is one request by its nature)
PAGES = [  # (page, the id of the form its load trigger sends, where it sends it, how)
    ("/explore", "explore", "/explore/run", "POST"),
    ("/memory", "memory", "/memory/run", "POST"),
    ("/segments", "segments", "/segments/run", "POST"),
    ("/state", "state", "/state/run", "POST"),
    ("/focus", "focus", "/focus/run", "POST"),
    ("/ff", "ff-keys", "/ff/keys", "GET"),  # the page opens on its key browser; the lens runs on a text typed
    ("/compare", "compare", "/compare/run", "POST"),
]


class FormFields(HTMLParser):
    """The fields one form (by id) sends, as htmx serialises it."""

    def __init__(self, form_id: str):
        super().__init__()
        self.form_id, self.inside, self.fields = form_id, False, []
        self._select: str | None = None
        self._options: list[tuple[str, bool]] = []
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.inside = a.get("id") == self.form_id
        if not self.inside:
            return
        if tag == "input" and a.get("name"):
            if a.get("type") not in ("checkbox", "radio") or "checked" in a:
                self.fields.append((a["name"], a.get("value") or ""))
        elif tag == "select" and a.get("name"):
            self._select, self._options = a["name"], []
        elif tag == "option" and self._select is not None:
            self._options.append((a.get("value") or "", "selected" in a))
        elif tag == "textarea" and a.get("name"):
            self._textarea = a["name"]
            self.fields.append((a["name"], ""))

    def handle_data(self, data):
        if self._textarea is not None:
            name, text = self.fields[-1]
            self.fields[-1] = (name, text + data)

    def handle_endtag(self, tag):
        if tag == "textarea":
            self._textarea = None
        elif tag == "select" and self._select is not None:
            chosen = [value for value, selected in self._options if selected] or [v for v, _ in self._options[:1]]
            self.fields.extend((self._select, value) for value in chosen)
            self._select = None
        elif tag == "form":
            self.inside = False


def form_of(html: str, form_id: str) -> dict[str, list[str]]:
    parser = FormFields(form_id)
    parser.feed(html)
    if not parser.fields:
        raise RuntimeError(f"no form #{form_id} with fields on the page")
    fields: dict[str, list[str]] = {}
    for name, value in parser.fields:
        fields.setdefault(name, []).append(value)
    return fields


def timed(send) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = send()
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text[:300]}")
    return (time.perf_counter() - start) * 1e3, response


def page_and_run(http: httpx.Client, page: str, form_id: str, run: str, method: str) -> tuple[float, float]:
    page_ms, response = timed(lambda: http.get(page))
    fields = form_of(response.text, form_id)
    send = {
        "GET": lambda: http.get(run, params=fields, headers=HTMX),
        "POST": lambda: http.post(run, data=fields, headers=HTMX),
    }
    run_ms, answer = timed(send[method])
    for path, loaded in loads_of(answer):  # what the answer loads when swapped in: a comparison's rows, its figure
        run_ms += timed(lambda path=path, loaded=loaded: http.post(path, data=loaded, headers=HTMX))[0]
    return page_ms, run_ms


def wait_for_health(base: str, server: subprocess.Popen, launched: float, until: str) -> tuple[float, float]:
    """(seconds to the first answer of /healthz, seconds until it reports `until`: "scanned", the scan done, or
    "warmed", the warm-up done too)."""
    first = None
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}")
        try:
            health = httpx.get(f"{base}/healthz", timeout=1).json()
        except httpx.HTTPError:
            time.sleep(0.02)
            continue
        now = time.perf_counter() - launched
        first = first if first is not None else now
        if health["status"] == "ok" and (until == "scanned" or health["warm_up"] != "running"):
            return first, now
        time.sleep(0.02)


def cli_rows() -> list[tuple[str, list[str], str]]:
    """(label, the command's arguments, the same work as plain Python: its imports and calls)."""
    text = "Ein Hund läuft über die Wiese."
    checkpoint = "from inference.core.checkpoint import CheckpointRegistry, load_checkpoint"
    load = f"{checkpoint}; m = load_checkpoint(ROOT / 'memtransformer_10', 'cpu')"
    return [
        ("--help", ["--help"], "pass"),
        ("models", ["models"], f"{checkpoint}; CheckpointRegistry(ROOT, 'cpu')"),
        ("translate", ["translate", "--model", "memtransformer_10", text],
         f"{load}; from inference.core.tracing import run_with_trace; run_with_trace(m, {text!r}, names=[])"),
        ("hooks", ["hooks", "--model", "memtransformer_10"],
         f"{load}; from inference.core.hooks import hook_points; hook_points(m.model)"),
    ]  # fmt: skip


def process_seconds(arguments: list[str]) -> float:
    """The fastest of three runs of a fresh Python process, from launch to exit."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, *arguments], cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--at-scan", action="store_true", help="open the pages when the scan ends: race the warm-up")
    args = parser.parse_args()
    environment = {
        **os.environ,
        "MEMLENS_DATABASE": str(Path(tempfile.mkdtemp()) / "startup.sqlite3"),
        "MEMLENS_DEVICE": "cpu",
        "MEMLENS_MAX_CACHE_MB": "0",  # a warm request computes what the first one did, nothing is answered whole
    }
    base = f"http://127.0.0.1:{args.port}"
    launched = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "memlens_cli.main", "serve", "--port", str(args.port)],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        first, scanned = wait_for_health(base, server, launched, "scanned")
        print(f"/healthz first answered {first:.2f} s after launch; every model scanned at {scanned:.2f} s")
        if not args.at_scan:
            warmed = wait_for_health(base, server, launched, "warmed")[1]
            print(f"the warm-up done at {warmed:.2f} s; the pages opened then")
        else:
            print("the pages opened at once, racing the warm-up")
        print(f"{'page':10} {'first page ms':>14} {'first run ms':>13} {'warm page ms':>13} {'warm run ms':>12} "
              f"{'page x':>7} {'run x':>6}")  # fmt: skip
        with httpx.Client(base_url=base, timeout=300) as http:
            for page, form_id, run, method in PAGES:
                first_page, first_run = page_and_run(http, page, form_id, run, method)
                warm = [page_and_run(http, page, form_id, run, method) for _ in range(WARM_REPEATS)]
                warm_page, warm_run = (statistics.median(times) for times in zip(*warm))
                print(f"{page:10} {first_page:14.1f} {first_run:13.1f} {warm_page:13.1f} {warm_run:12.1f} "
                      f"{first_page / warm_page:7.2f} {first_run / warm_run:6.2f}", flush=True)  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("\neach command against the same work as a plain Python process (its imports and calls, no CLI)")
    print(f"{'command':12} {'memlens s':>10} {'plain s':>8} {'overhead s':>11}")
    for label, cli_args, work in cli_rows():
        command = process_seconds(["-m", "memlens_cli.main", *cli_args])
        plain = process_seconds(["-c", f"from pathlib import Path; ROOT = Path('checkpoints'); {work}"])
        print(f"{label:12} {command:10.2f} {plain:8.2f} {command - plain:11.2f}", flush=True)


if __name__ == "__main__":
    main()
