"""Request bodies are bounded before anything parses them: a body over the
limit (by its Content-Length, or by what actually arrives) is answered
413 with a message, so no list or string from a client can grow without
bound on its way to a route."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request

from app.routers.errors import error_response


class BodyTooLarge(HTTPException):
    """Raised while a route reads the body; the app's error handlers answer it (413)."""

    def __init__(self, limit: int):
        super().__init__(413, too_large_message(limit))


def too_large_message(limit: int) -> str:
    return f"the request body is over {limit:,} bytes"


class LimitBody:
    """ASGI middleware: `limit` bytes for every request body."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await self._refuse(scope, receive, send)
        received = 0
        started = False

        async def bounded_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        async def tracking_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope, receive, send) -> None:
        """A 413 in the form the request came from (JSON, htmx fragment or page)."""
        await error_response(Request(scope), 413, too_large_message(self.limit))(scope, receive, send)
