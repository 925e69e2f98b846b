"""Work for a client that has gone is not started.

`WatchDisconnect` is an ASGI middleware: it reads the request's messages
itself, so it sees `http.disconnect` as soon as the client closes the
connection, and marks the request's event; so does the end of the
request's task (a stopping server cancels the tasks still running). Model work that waits for the
model lock (app/services/gateway.py) polls `client_gone()` and gives up instead of
running for nobody.
"""

from __future__ import annotations

import asyncio
import threading
from contextvars import ContextVar

from starlette.types import ASGIApp, Receive, Scope, Send

_GONE: ContextVar[threading.Event | None] = ContextVar("memlens_client_gone", default=None)


class ClientGone(Exception):
    """The client closed the connection before its work started."""


def client_gone() -> bool:
    """True once the current request's client has disconnected (False outside a request)."""
    event = _GONE.get()
    return event is not None and event.is_set()


class WatchDisconnect:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        gone = threading.Event()
        messages: asyncio.Queue = asyncio.Queue()

        async def pump() -> None:
            try:
                while True:
                    message = await receive()
                    await messages.put(message)
                    if message["type"] == "http.disconnect":
                        gone.set()
                        return
            except Exception as error:  # e.g. a body over its limit: raised where the app reads it
                await messages.put(error)

        async def next_message() -> dict:
            message = await messages.get()
            if isinstance(message, Exception):
                raise message
            return message

        reader = asyncio.create_task(pump())
        token = _GONE.set(gone)  # sync routes run in worker threads with a copy of this context
        try:
            await self.app(scope, next_message, send)
        finally:  # answered, failed, or cancelled by a stopping server: work still waiting for the model is for nobody
            gone.set()
            _GONE.reset(token)
            reader.cancel()
