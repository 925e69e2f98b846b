"""What a server does after it starts, on a thread of its own, so that a user's first request on any page costs
about what a later one does: it waits for the checkpoint scan, compiles every template, then asks the app for every
page that runs a model, and for the run that page's form sends when it opens, as a browser would. That loads the
models each page opens on, reads their studies, runs each model once on its example (a model's first run pays
one-time costs a later one does not) and builds the figures of each kind the page shows.

The server answers meanwhile. The warm-up's runs take the gateway's turn like any request, so a user's request
waits at most for the one run in progress; whatever it needs that the warm-up has not reached yet, it loads itself.
A server that stops stops the warm-up after the request in progress and waits for it: an interpreter that exits
while a model runs on another thread aborts in PyTorch's teardown ("terminate called without an active exception").
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from urllib.parse import urlencode

from starlette.types import ASGIApp, Message

from app.services.examples import example_input
from app.services.focus import partner
from app.services.gateway import ModelGateway
from app.services.gating import offered, opening_models, page_model
from app.services.pages import COMPARE, FOCUS, MODEL_PAGES, Page

WARMED_PAGES = (*MODEL_PAGES, COMPARE)  # the pages that run a model when they open
log = logging.getLogger("memlens.warm_up")


def shown_on_opening(gateway: ModelGateway, page: Page) -> list[str]:
    """The models `page` shows when it opens (`opening_models`); on Focus, the model beside the first too."""
    names = opening_models(offered(gateway, page), page)
    if page is FOCUS and names:
        names.append(partner(gateway, page_model(gateway, FOCUS, names[0])))
    return [name for name in names if name]


def status_of(app: ASGIApp, method: str, path: str, form: Mapping[str, str | Sequence[str]]) -> int:
    """`method` `path` with `form` (a query for GET, a form body for POST, as htmx sends it), from the app in this
    thread, through every middleware as a browser's request would pass; the answer's status."""
    encoded = urlencode(form, doseq=True).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": encoded if method == "GET" else b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"hx-request", b"true"),
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"content-length", str(0 if method == "GET" else len(encoded)).encode()),
        ],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    sent = False
    status = 0

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"" if method == "GET" else encoded, "more_body": False}
        await asyncio.Event().wait()  # the client stays: nothing more arrives until the answer is sent
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    async def answered() -> None:
        await app(scope, receive, send)

    asyncio.run(answered())
    return status


def warm_up(app: ASGIApp, gateway: ModelGateway, stopping: threading.Event) -> list[str]:
    """Compile the templates, then ask for every page that runs a model and for its opening run, until `stopping`
    is set; returns the models those opened on, in order. A page that answers otherwise than 200 is logged and left
    for its user to see (a broken model's entry says why)."""
    templates = app.state.templates.env  # type: ignore[attr-defined]
    for name in templates.list_templates():
        templates.get_template(name)
    warmed: list[str] = []
    for page in WARMED_PAGES:
        names = shown_on_opening(gateway, page)
        if not names:
            continue
        example = example_input(gateway.registry.entries[names[0]])
        form = {"model": names[0], "models": names, "text": example}
        opens = page.opens_with if page.opens_with and example else None  # no example: no text to open with
        asked: list[tuple[str, str, Mapping[str, str | Sequence[str]]]] = [("GET", page.path, {})]
        if opens:
            asked.append((*opens, form))
        for method, path, sent_form in asked:
            if stopping.is_set():
                return warmed
            status = status_of(app, method, path, sent_form)
            if status != 200:
                log.warning("%s %s answered %d while warming up", method, path, status)
        warmed.extend(name for name in names if name not in warmed)
    return warmed


class WarmUp:
    """`warm_up` on a daemon thread of its own, started at once."""

    STOP_WAIT_SECONDS = 120  # the longest a stopping server waits for the warm-up's request in progress

    def __init__(self, app: ASGIApp, gateway: ModelGateway) -> None:
        self._stopping = threading.Event()
        self._warmed: Future[list[str]] = Future()
        self._thread = threading.Thread(target=self._run, args=(app, gateway), name="warm-up", daemon=True)
        self._thread.start()

    def _run(self, app: ASGIApp, gateway: ModelGateway) -> None:
        try:
            self._warmed.set_result(warm_up(app, gateway, self._stopping))
        except BaseException as failure:  # kept for whoever asks; the server goes on without it
            log.exception("warm-up failed")
            self._warmed.set_exception(failure)

    @property
    def state(self) -> str:
        """ "running", or "done" once it has ended (finished, stopped or failed)."""
        return "done" if self._warmed.done() else "running"

    def result(self, timeout: float | None = None) -> list[str]:
        """The models the warm-up opened on, once it has ended (a stopped one: those it reached)."""
        return self._warmed.result(timeout)

    def stop(self) -> None:
        """End the warm-up after its request in progress and wait for it."""
        self._stopping.set()
        self._thread.join(self.STOP_WAIT_SECONDS)
        if self._thread.is_alive():
            log.warning("the warm-up's request in progress outlasted %d s; stopping without it", self.STOP_WAIT_SECONDS)
