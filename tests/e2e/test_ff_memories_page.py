"""The FF memories page in a real browser on the shipped checkpoints: the
study by layer, the key browser, the logit lens and a live key
intervention, for the language model and a translation model's decoder."""

from __future__ import annotations

import re

from playwright.sync_api import expect

LANGUAGE_MODEL = "language_model"
TRANSLATOR = "memtransformer_20"
ENGLISH = "The city is the capital of the province and the largest city in the country."
GERMAN = "Ein Mann in einem blauen Hemd spielt Gitarre."
SWAP_MS = 30_000  # how long an htmx swap may take on a busy machine (Playwright's default wait)


def open_ff(page, server_url, model):
    page.goto(f"{server_url}/ff?model={model}")
    for figure in ("ff-agreement", "ff-cases", "ff-memories"):
        page.wait_for_selector(f"#figure-{figure} .main-svg")
    page.wait_for_selector("#keys .key-card")


def first_key(page) -> str:
    return page.locator("#keys .key-card").first.get_attribute("data-key")


def run_text(page, text):
    page.fill("#ff-run textarea[name=text]", text)
    with page.expect_response(lambda response: response.url.endswith("/ff/run")):
        page.click("#ff-run button[type=submit]")
    page.wait_for_selector("#lens-table tbody tr")


def test_key_browser_orders_pages_and_jumps_to_keys(page, server_url):
    open_ff(page, server_url, LANGUAGE_MODEL)
    cards = page.locator("#keys .key-card")
    assert cards.count() == 12
    assert "keys by agreement" in page.text_content("#keys")
    assert cards.first.locator(".triggers li mark").count() >= 1  # trigger token marked in each example
    assert cards.first.locator(".value-tokens .chip").count() == 8
    by_agreement = first_key(page)

    with page.expect_response(lambda response: "/ff/keys" in response.url):
        page.select_option("#ff-keys select[name=order]", "coefficient")
    expect(page.locator("#keys")).to_contain_text("keys by coefficient", timeout=SWAP_MS)
    coefficients = [
        float(re.search(r"top m ([\d.]+)", cards.nth(i).text_content()).group(1)) for i in range(cards.count())
    ]
    assert coefficients == sorted(coefficients, reverse=True)

    with page.expect_response(lambda response: "/ff/keys" in response.url):
        page.click("#keys button.page")
    expect(page.locator("#keys")).to_contain_text("page 2 of", timeout=SWAP_MS)

    with page.expect_response(lambda response: "/ff/keys" in response.url):
        page.select_option("#ff-keys select[name=layer]", "5")
    expect(cards.first).to_have_attribute("data-key", re.compile(r"^layers\.5\.ff:"), timeout=SWAP_MS)
    assert "page 1 of" in page.text_content("#keys")  # a new layer starts at its first page
    assert by_agreement.startswith("layers.0.ff:")


def test_live_key_intervention_changes_the_predictions(page, server_url):
    open_ff(page, server_url, LANGUAGE_MODEL)
    run_text(page, ENGLISH)
    continuation = page.text_content("#output-plain").strip()
    assert continuation
    assert (
        page.locator("#lens-table tbody tr").first.locator("td").first.text_content() == "<eos>"
    )  # the text is read as an article's start

    # The top key at the first position of the lens fires there; zero it from the key browser.
    link = page.locator("#lens-table .key-link").first
    layer, key = link.get_attribute("data-layer"), link.get_attribute("data-key")
    with page.expect_response(lambda response: "/ff/keys" in response.url):
        link.click()
    expect(page.locator("#keys .key-card").first).to_have_attribute(
        "data-key", f"layers.{layer}.ff:{key}", timeout=SWAP_MS
    )
    with page.expect_response(lambda response: response.url.endswith("/ff/run")):
        page.locator("#keys .key-card button.edit-key", has_text="zero").first.click()
    page.wait_for_selector("#prediction-changes")
    assert page.input_value("#edits") == f"layers.{layer}.ff:{key} x0"
    assert f"layers.{layer}.ff keys {key}" in page.text_content(".lesion-note")
    rows = page.locator("#prediction-changes tbody tr")
    moved = 0
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td").all_text_contents()
        before = float(cells[1].split()[-1])
        kept = float(cells[3])
        moved += abs(before - kept) > 0.005
    assert moved >= 1, "zeroing a key that fires must move some prediction"

    with page.expect_response(lambda response: response.url.endswith("/ff/run")):
        page.click("#clear-edits")
    expect(page.locator("#prediction-changes")).to_have_count(0, timeout=SWAP_MS)
    assert page.text_content("#output-plain").strip() == continuation


def test_a_translation_decoder_in_the_key_browser_and_the_lens(page, server_url):
    open_ff(page, server_url, TRANSLATOR)
    assert first_key(page).startswith("decoder.layers.0.ff:")
    run_text(page, GERMAN)
    assert page.text_content("#output-plain").strip()
    assert page.locator("#lens-table tbody tr").first.locator("td").first.text_content() == "<bos>"


def test_bad_edits_show_an_error_in_the_page(page, server_url):
    open_ff(page, server_url, LANGUAGE_MODEL)
    page.fill("#edits", "layers.0.ff:99999")
    page.fill("#ff-run textarea[name=text]", ENGLISH)
    page.click("#ff-run button[type=submit]")
    page.wait_for_selector("#errors .error")
    assert "out of range" in page.text_content("#errors")
