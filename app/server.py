"""The uvicorn options that `memlens serve` and the tests' real server both run with: uvicorn's h11 protocol,
with the request line and headers bounded (app/schemas/validation.py) and answered the way the app answers.

Plain uvicorn answers a request head over h11's buffer limit with a text/plain 400 and closes the socket at
once; when the client is still sending (a GET with a 1 MB query string), the unread data makes the kernel reset
the connection, and the client gets no HTTP answer at all. Here a URL over MAX_URL_BYTES gets a 414 and a head
over MAX_HEAD_BYTES a 431, both with the JSON error body {"detail": ...} and the security headers, and the
connection is closed gracefully: the answer and a FIN go out, and what the client still sends is read and
dropped for up to LINGER_SECONDS, so the answer arrives before the socket closes."""

from __future__ import annotations

import json
from http import HTTPStatus

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.middleware.security import ENCODED_HEADERS
from app.schemas.validation import HEAD_TOO_LARGE, MAX_HEAD_BYTES, MAX_URL_BYTES, URL_TOO_LONG

LINGER_SECONDS = 2.0  # how long a refused client may go on sending before its connection is closed


def server_options(host: str, port: int, **options) -> dict:
    """Keyword arguments for uvicorn.run and uvicorn.Config: host:port and `options` (further Config fields),
    served by the bounded protocol."""
    return {
        "host": host,
        "port": port,
        **options,
        "http": BoundedH11Protocol,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }


def target_length(head: bytes) -> int:
    """Bytes of the request target (path and query) at the start of a request head, whole or still arriving."""
    line_end = head.find(b"\n")
    line = head if line_end < 0 else head[:line_end]
    method_end = line.find(b" ")
    if method_end < 0:
        return 0
    target_end = line.find(b" ", method_end + 1)
    return (len(line) if target_end < 0 else target_end) - method_end - 1


def error_answer(status: int, message: str, headers: list[tuple[bytes, bytes]]) -> bytes:
    """A whole HTTP/1.1 answer with the app's JSON error body; the connection closes after it."""
    body = json.dumps({"detail": message}).encode()
    fields = [
        *headers,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *ENCODED_HEADERS,
    ]
    lines = [b"HTTP/1.1 %d %s" % (status, HTTPStatus(status).phrase.encode())]
    lines += [name + b": " + value for name, value in fields]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol that refuses an over-long URL (414) or request head (431) with an answer, not a
    reset. A request line is measured while it arrives, so a 1 MB one is refused after its first 16 KiB."""

    refused = False

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return  # the rest of a refused request: read and dropped, so that the answer is not lost to a reset
        if self.conn.their_state is h11.IDLE and target_length(self.conn.trailing_data[0] + data) > MAX_URL_BYTES:
            self.refuse(HTTPStatus.REQUEST_URI_TOO_LONG, URL_TOO_LONG)
            return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        """h11 could not parse the request: its head outgrew MAX_HEAD_BYTES (431), or it is malformed (400).
        A request whose head was read and whose answer is under way is left to uvicorn, which closes it."""
        if self.cycle is not None and not self.cycle.response_complete:
            super().send_400_response(msg)
        elif len(self.conn.trailing_data[0]) > MAX_HEAD_BYTES:
            self.refuse(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, HEAD_TOO_LARGE)
        else:
            self.refuse(HTTPStatus.BAD_REQUEST, "invalid HTTP request")

    def refuse(self, status: int, message: str) -> None:
        """Answer, send FIN, and close once the client has closed too or LINGER_SECONDS have passed."""
        self.refused = True
        self.logger.warning("refused with %d: %s", status, message)
        self._unset_keepalive_if_required()
        self.transport.write(error_answer(status, message, self.server_state.default_headers))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def shutdown(self) -> None:
        if self.refused:
            self.transport.close()
        else:
            super().shutdown()
