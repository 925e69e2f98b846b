"""Security headers on every response, and no state-changing request from
another site.

The pages load scripts and styles from this server only and run no inline
script (figure data travels in <script type="application/json"> blocks,
which are data, not code). Plotly styles its own elements at run time, so
styles may be inline; nothing else is. A POST, PUT, PATCH or DELETE that a
browser sends from another origin (told by Sec-Fetch-Site, else by Origin)
is refused with a 403; requests that carry neither header (curl, Python
clients) are not browsers acting for another site and pass.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.routers.errors import error_response

CSP_DIRECTIVES = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",  # Plotly injects its stylesheet and styles its SVG at run time
    "img-src": "'self' data: blob:",  # heatmaps are drawn as data: images; the favicon is a data: URL
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
CONTENT_SECURITY_POLICY = "; ".join(f"{directive} {sources}" for directive, sources in CSP_DIRECTIVES.items())
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
ENCODED_HEADERS = [(name.lower().encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}
SAME_ORIGIN_FETCH_SITES = {"same-origin", "none"}  # "none": the user typed it or followed a bookmark


def cross_origin_reason(method: str, headers: Headers) -> str | None:
    """Why a request is a cross-origin state change, or None when it is not one."""
    if method not in STATE_CHANGING:
        return None
    fetch_site = headers.get(
        "sec-fetch-site"
    )  # set by the browser alone, so it decides where present (Host may be a proxy's)
    if fetch_site is not None:
        return None if fetch_site in SAME_ORIGIN_FETCH_SITES else f"the browser marked it as {fetch_site}"
    origin = headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != headers.get("host", ""):
        return "its Origin is not this server"
    return None


class SecurityMiddleware:
    """Adds SECURITY_HEADERS to every HTTP response; answers a cross-origin
    state-changing request with a 403 before it reaches the app."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in ENCODED_HEADERS if name not in present]
                message["headers"] = headers
            await send(message)

        reason = cross_origin_reason(scope["method"], Headers(scope=scope))
        if reason is not None:
            message = (
                f"cross-origin request refused: {reason}; "
                f"{scope['method']} requests are accepted from this server's own pages only"
            )
            await error_response(Request(scope), 403, message)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)
