"""The API docs in a real browser with nothing reachable but this server:
Swagger UI comes from the installed swagger-ui-bundle-v2 package, made
accessible by static/api-docs.css and static/api-docs.js (axe-core finds
no violation of any impact)."""

from __future__ import annotations

from urllib.parse import urlsplit

from axe_playwright_python.sync_playwright import Axe


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


def axe_violations(page) -> list[str]:
    """axe-core's violations of any impact on the page as it is now: 'rule (impact): the first nodes'."""
    found = Axe().run(page).response["violations"]
    return [f"{rule['id']} ({rule['impact']}): {[node['target'] for node in rule['nodes'][:3]]}" for rule in found]


def test_docs_pass_axe_on_load_and_with_operations_open(page, server_url):
    page.goto(f"{server_url}/docs")
    page.locator("section.models").wait_for(timeout=30_000)
    assert axe_violations(page) == []
    page.locator(".opblock-summary").first.click()
    page.locator(".opblock-body").first.wait_for()
    assert axe_violations(page) == []
    translate = page.locator("#operations-api-translate_api_translate_post")
    translate.locator(".opblock-summary-control").click()
    translate.locator("button.try-out__btn").click()
    translate.locator("textarea.body-param__text").wait_for()
    assert axe_violations(page) == []


def test_operation_paths_are_no_links_inside_their_buttons_and_deep_links_still_open(page, server_url):
    page.goto(f"{server_url}/docs#/api/models_api_models_get")
    page.locator("#operations-api-models_api_models_get .opblock-body").wait_for(timeout=30_000)
    assert page.locator(".opblock-summary-control a[href]").count() == 0
    page.locator("#operations-api-translate_api_translate_post .opblock-summary-control").click()
    page.wait_for_url("**/docs#/api/translate_api_translate_post")
