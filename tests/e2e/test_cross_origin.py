"""A page on another origin cannot make the app change anything: Chromium
marks its form post cross-site and the server answers 403; the app's own
pages post as before."""

from __future__ import annotations

from tests.e2e.conftest import open_page

ELSEWHERE = "http://elsewhere.test/"


def sweeps_listed(page, server_url) -> int:
    page.goto(f"{server_url}/upload")
    return page.locator(".recent li", has_text="sweep").count()


def test_form_post_from_another_site_is_refused(page, server_url):
    """The page elsewhere would start a lesion sweep (a job on the server) with one click."""
    sweeps = sweeps_listed(page, server_url)
    page.route(
        ELSEWHERE,
        lambda route: route.fulfill(
            content_type="text/html",
            body=(
                f'<form method="post" action="{server_url}/sweep">'
                '<input type="hidden" name="model" value="memtransformer_10">'
                '<input type="hidden" name="reference" value="demo"><button>win a prize</button></form>'
            ),
        ),
    )
    page.goto(ELSEWHERE)
    with page.expect_response(f"{server_url}/sweep") as answer:
        page.click("button")
    assert answer.value.status == 403
    assert "cross-origin request refused: the browser marked it as cross-site" in page.text_content("body")
    assert sweeps_listed(page, server_url) == sweeps


def test_own_pages_post_as_before(page, server_url):
    open_page(page, f"{server_url}/compare")
    page.fill("#compare textarea[name=text]", "Ein Hund rennt.")
    with page.expect_response(f"{server_url}/compare/run") as answer:
        page.click("#compare button[type=submit]")
    assert answer.value.status == 200
    page.wait_for_selector("#figure-compare .main-svg")
