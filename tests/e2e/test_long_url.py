"""An over-long URL or request head gets an HTTP answer from the real server (app/server.py), not a reset
connection: a 414 or 431 with the app's JSON error body, read after the client has sent all it meant to."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

from app.schemas.validation import HEAD_TOO_LARGE, MAX_URL_BYTES, URL_TOO_LONG
from tests.e2e.conftest import serve


@pytest.fixture(scope="module")
def address(tmp_path_factory):
    """(host, port) of a real server with no checkpoints: it starts at once, and URLs need no model."""
    folder = tmp_path_factory.mktemp("long_url")
    (folder / "checkpoints").mkdir()
    with serve(folder / "checkpoints", folder / "memlens.sqlite3") as url:
        parts = urlsplit(url)
        yield parts.hostname, parts.port


def exchange(address, *parts: bytes) -> tuple[bytes, dict]:
    """Send `parts` on one connection, as a client that writes all of its request before it reads; then read
    the answer to the end. (status line, JSON body); a reset connection raises ConnectionResetError."""
    with socket.create_connection(address, timeout=30) as connection:
        for part in parts:
            connection.sendall(part)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0], json.loads(body)


def get(query: bytes) -> bytes:
    return b"GET /api/models?q=" + query + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("length", [20_000, 1_000_000])
def test_a_long_query_string_is_answered_414_with_the_json_error(address, length):
    status, body = exchange(address, get(b"a" * length))
    assert status == b"HTTP/1.1 414 Request-URI Too Long"
    assert body == {"detail": URL_TOO_LONG}


def test_a_query_string_under_the_bound_is_served(address):
    status, body = exchange(address, get(b"a" * (MAX_URL_BYTES - 100)))
    assert status == b"HTTP/1.1 200 OK"
    assert body["models"] == []


def test_headers_over_the_bound_arriving_in_pieces_are_answered_431(address):
    header = b"X-Large: " + b"b" * 50_000 + b"\r\n"
    status, body = exchange(address, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", header[:20_000], header[20_000:])
    assert status == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert body == {"detail": HEAD_TOO_LARGE}
