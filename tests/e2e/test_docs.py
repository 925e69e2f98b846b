"""The API docs in a real browser with nothing reachable but this server:
Swagger UI comes from the installed swagger-ui-bundle-v2 package."""

from __future__ import annotations

from urllib.parse import urlsplit


def test_docs_list_the_operations_offline(page, server_url):
    outside: list[str] = []

    def only_loopback(route):
        if urlsplit(route.request.url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_loopback)
    page.goto(f"{server_url}/docs")
    translate = page.locator(".opblock-post .opblock-summary-path[data-path='/api/translate']")
    translate.wait_for(timeout=30_000)
    summaries = [" ".join(text.split()) for text in page.locator(".opblock-summary").all_inner_texts()]
    assert any(s.startswith("POST /api/translate") for s in summaries), summaries
    assert any(s.startswith("GET /api/models") for s in summaries), summaries
    assert len(summaries) >= 10
    assert outside == []


def test_redoc_is_not_offered(page, server_url):
    assert page.goto(f"{server_url}/redoc").status == 404
