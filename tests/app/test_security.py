"""Security headers on every response, no inline script in the pages, and
state-changing requests from another site refused."""

from __future__ import annotations

import re

import pytest

from tests.app.conftest import HTMX

MODEL = "tiny_memtransformer"
TRANSLATE = {"model": MODEL, "text": "ein Hund spielt im Park"}


def policy(response) -> dict[str, list[str]]:
    """The Content-Security-Policy as {directive: sources}."""
    directives = [part.split() for part in response.headers["content-security-policy"].split(";") if part.strip()]
    return {name: sources for name, *sources in directives}


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/"),
        ("GET", f"/explore?model={MODEL}"),
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("GET", "/static/app.js"),
        ("GET", "/vendor/plotly.min.js"),
        ("GET", "/api/models"),
        ("GET", "/no-such-page"),
        ("POST", "/api/translate"),
    ],
)
def test_every_response_carries_the_security_headers(client, method, path):
    response = client.request(method, path, json={} if method == "POST" else None)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    directives = policy(response)
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["script-src"] == ["'self'"]  # no inline script, no eval
    assert directives["object-src"] == ["'none'"]
    assert directives["default-src"] == ["'self'"]


def test_pages_run_no_inline_script(client):
    pages = [
        client.get("/").text,
        client.get("/explore", params={"model": MODEL}).text,
        client.get("/docs").text,
        client.post("/explore/run", data=TRANSLATE, headers=HTMX).text,
    ]
    for page in pages:
        for attributes, body in re.findall(r"<script([^>]*)>(.*?)</script>", page, flags=re.DOTALL):
            assert "src=" in attributes or 'type="application/json"' in attributes, (
                f"inline script: {attributes} {body[:80]}"
            )
        assert not re.search(r"\son[a-z]+\s*=", page), "inline event handler"
    assert "unpkg.com" not in pages[2] and "cdn.jsdelivr.net" not in pages[2]


@pytest.mark.parametrize(
    "headers, reason",
    [
        ({"Origin": "https://elsewhere.example"}, "its Origin is not this server"),
        ({"Origin": "null"}, "its Origin is not this server"),
        (
            {"Sec-Fetch-Site": "cross-site", "Origin": "https://elsewhere.example"},
            "the browser marked it as cross-site",
        ),
        ({"Sec-Fetch-Site": "same-site", "Origin": "http://other.testserver"}, "the browser marked it as same-site"),
        ({"Sec-Fetch-Site": "cross-site"}, "the browser marked it as cross-site"),
    ],
)
def test_cross_origin_state_changes_are_refused(client, headers, reason):
    response = client.post("/api/translate", json=TRANSLATE, headers=headers)
    assert response.status_code == 403
    assert response.json()["detail"].startswith(f"cross-origin request refused: {reason}")
    assert response.headers["x-frame-options"] == "DENY"
    for method in ("PUT", "PATCH", "DELETE"):
        assert client.request(method, "/api/translate", headers=headers).status_code == 403


def test_cross_origin_form_post_from_a_page_gets_a_readable_error(client):
    response = client.post("/explore/run", data=TRANSLATE, headers={**HTMX, "Origin": "https://elsewhere.example"})
    assert response.status_code == 403
    assert 'class="error"' in response.text and "cross-origin request refused" in response.text


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, the Python client: no browser acting for another site
        {"Origin": "http://testserver"},
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"},
        {"Sec-Fetch-Site": "same-origin", "Origin": "https://memlens.example"},  # behind a proxy that rewrites Host
        {"Sec-Fetch-Site": "none"},  # typed in by the user
    ],
)
def test_same_origin_and_non_browser_requests_pass(client, headers):
    response = client.post("/api/translate", json=TRANSLATE, headers=headers)
    assert response.status_code == 200, response.text
    assert isinstance(response.json()["translation"], str)


def test_reads_from_another_origin_pass(client):
    response = client.get(
        "/api/models", headers={"Origin": "https://elsewhere.example", "Sec-Fetch-Site": "cross-site"}
    )
    assert response.status_code == 200
