"""A real uvicorn server on the shipped checkpoints, driven by Debian's
Chromium through Playwright (no browser download). Screenshots go to
test-artifacts/; a JavaScript error or a Content-Security-Policy violation
on a page fails its test."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

from app.main import create_app
from app.server import server_options
from app.services.demo import demo_sentences
from app.settings import Settings
from inference.core.places import REPO_ROOT

CHROMIUM = "/usr/bin/chromium"
QUIET = "!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
DRAWN = "[...document.querySelectorAll('[data-figure]')].every((f) => f.dataset.drawn === 'true')"  # titles fitted
# Counts settled swaps; registered before the page's scripts, so a figure drawn on htmx:afterSettle is drawn by
# the time the count moves.
COUNT_SETTLES = "window.settles = 0; document.addEventListener('htmx:afterSettle', () => { window.settles += 1; });"
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(checkpoint_dir: Path, database: Path, models_dirs: Sequence[Path] = (), **options: Any) -> Iterator[str]:
    """A real server on loopback over `checkpoint_dir` (and `models_dirs`; `options`: more settings), in a thread
    of this process; yields its address."""
    port = free_port()
    settings = Settings(
        checkpoint_dir=checkpoint_dir, models_dirs=list(models_dirs), device="cpu", database=database, **options
    )
    server = uvicorn.Server(
        uvicorn.Config(create_app(settings), **server_options("127.0.0.1", port, log_level="warning"))
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start in 30 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def server_url(tmp_path_factory):
    with serve(REPO_ROOT / "checkpoints", tmp_path_factory.mktemp("db") / "memlens.sqlite3") as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (see README)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(COUNT_SETTLES)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    violations: list[str] = []  # the browser reports what the Content-Security-Policy blocked as console errors
    page.on(
        "console",
        lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None,
    )
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
    assert not violations, f"Content-Security-Policy violations on the page: {violations}"


def wait_until(page, predicate: str, timeout: float = 30_000, every: float = 0.1) -> None:
    """Wait until the JavaScript `predicate` (an arrow function) is true on the page, polling from
    here with page.evaluate. Playwright's wait_for_function re-evaluates a string predicate inside the
    page, which the page's Content-Security-Policy (script-src 'self', no 'unsafe-eval') may refuse
    with an EvalError; page.evaluate runs through the DevTools protocol, which the policy allows."""
    deadline = time.monotonic() + timeout / 1000
    while not holds(page, predicate):
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true after {timeout / 1000:.0f} s: {predicate}")
        time.sleep(every)


def holds(page, predicate: str) -> bool:
    """`predicate` on the page now; false while a navigation replaces the document under it."""
    try:
        return bool(page.evaluate(predicate))
    except PlaywrightError as error:
        if "Execution context was destroyed" in error.message:
            return False
        raise


def open_page(page, url: str):
    """Open `url` and wait until what it runs on load (a page's example) is shown and drawn, as a person sees
    it before touching anything; returns the navigation's response."""
    response = page.goto(url)
    wait_until(page, f"() => {QUIET} && {DRAWN}", timeout=90_000)
    return response


def swap(page, action, *args, settles: int = 1) -> None:
    """Run `action(*args)` and wait until htmx has settled `settles` swaps and every figure on the page is drawn.
    Any request already in flight finishes first, so its swap is not mistaken for the one `action` starts."""
    wait_until(page, f"() => {QUIET}", timeout=90_000)
    before = page.evaluate("window.settles")
    action(*args)
    wait_until(page, f"() => window.settles >= {before + settles} && {QUIET} && {DRAWN}", timeout=90_000)
    errors = page.locator("#errors .error")
    assert errors.count() == 0, errors.first.text_content()


def upload_demo_corpus(page, server_url: str, model: str, folder: Path, rows: int = 6) -> None:
    """Upload the first `rows` demo pairs as a .tsv for `model` and land on the result permalink."""
    corpus = folder / "demo.tsv"
    corpus.write_text("".join(f"{d.source}\t{d.reference}\n" for d in demo_sentences()[:rows]), encoding="utf-8")
    page.goto(f"{server_url}/upload")
    page.select_option("select[name=model]", model)
    page.set_input_files("input[name=file]", str(corpus))
    page.click("#upload button[type=submit]")
    page.wait_for_url(f"{server_url}/results/*")
