"""Every answer says how long the server took to make it: a `Server-Timing: app;dur=<ms>` header (shown by a
browser's developer tools beside the request), from the request's arrival at the app to its answer's start,
every middleware included. The answer's body is made by then (every page and API answer is built whole
before it starts); a streamed answer's time counts to its first part."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TIMING = "app"  # the metric's name in the header


def server_timing(seconds: float) -> bytes:
    return f"{TIMING};dur={seconds * 1e3:.2f}".encode()


class ServerTiming:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"server-timing", server_timing(time.perf_counter() - start))]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, timed)
