"""The FF memories page in a real browser on the shipped checkpoints: the
study by layer, the key browser, the logit lens and a live key
intervention, for the language model and a translation model's decoder."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import open_page

LANGUAGE_MODEL = "language_model"
TRANSLATOR = "memtransformer_20"
ENGLISH = "The city is the capital of the province and the largest city in the country."
GERMAN = "Ein Mann in einem blauen Hemd spielt Gitarre."
SWAP_MS = 30_000  # how long an htmx swap may take on a busy machine (Playwright's default wait)


def open_ff(page, server_url, model):
    open_page(page, f"{server_url}/ff?model={model}")
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
    assert "keys by effect on the text" in page.text_content("#keys")  # the order the page opens in
    shares = [float(re.search(r"effect (-?[\d.]+)× margin", cards.nth(i).text_content()).group(1)) for i in range(12)]
    assert shares == sorted(shares, reverse=True)
    with page.expect_response(lambda response: "/ff/keys" in response.url):
        page.select_option("#ff-keys select[name=order]", "agreement")
    expect(page.locator("#keys")).to_contain_text("keys by agreement", timeout=SWAP_MS)
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
    first_cell = page.locator("#lens-table tbody tr").first.locator("td").first
    assert first_cell.text_content() == "eos"  # the text is read as an article's start: <eos>, a named chip
    assert first_cell.locator(".token.special").get_attribute("title") == "special token <eos>"

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
    first_cell = page.locator("#lens-table tbody tr").first.locator("td").first
    assert first_cell.text_content() == "bos"  # the decoder's start: <bos>, a named chip
    assert first_cell.locator(".token.special").get_attribute("title") == "special token <bos>"


def test_bad_edits_show_an_error_in_the_page(page, server_url):
    open_ff(page, server_url, LANGUAGE_MODEL)
    page.fill("#edits", "layers.0.ff:99999")
    page.fill("#ff-run textarea[name=text]", ENGLISH)
    page.click("#ff-run button[type=submit]")
    page.wait_for_selector("#errors .error")
    assert "out of range" in page.text_content("#errors")


def viewport_holds(page, locator) -> bool:
    """Whether all of the element is inside the browser window as the page is scrolled now."""
    box, view = locator.bounding_box(), page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= view["height"]


def test_zero_on_a_key_card_answers_beside_it_without_a_text(page, server_url):
    """A new user's first click: no text entered, "zero" on the first key card. The edit runs on the
    example text at once, and what it changed (a prediction: the cards open ordered by their effect on the
    example) shows in the card, inside the window."""
    open_ff(page, server_url, LANGUAGE_MODEL)
    text = page.locator("#ff-run textarea[name=text]")
    assert text.input_value() == ""
    card = page.locator("#keys .key-card").first
    key = card.get_attribute("data-key")
    zero = card.locator("button.edit-key", has_text="zero")
    zero.scroll_into_view_if_needed()
    assert not viewport_holds(page, page.locator("#ff-results"))  # the results are far below the key browser
    with page.expect_response(lambda response: response.url.endswith("/ff/run")):
        zero.click()
    status = card.locator(".key-status")
    expect(status).to_contain_text("next-token prediction", timeout=SWAP_MS)

    assert viewport_holds(page, status) and viewport_holds(page, zero)
    assert 0 <= status.bounding_box()["y"] - zero.bounding_box()["y"] < 200  # right under the button
    said = status.text_content()
    assert f"{key} x0" in said
    assert text.input_value() == text.get_attribute("data-example") != ""  # the example, written into the box
    assert page.input_value("#edits") == f"{key} x0"
    changed = page.locator("#prediction-changes tbody tr.changed").count()  # the full table, under "One input"
    shared = page.locator("#prediction-changes tbody tr").count()
    assert changed >= 1  # the first card (effect order) is a key the example's predictions lean on
    assert f"{changed} of {shared} next-token predictions change" in said
    assert page.locator(".key-status:not(:empty)").count() == 1

    # a second key's boost answers in its own card; the first card's line is cleared
    other = page.locator("#keys .key-card").nth(1)
    with page.expect_response(lambda response: response.url.endswith("/ff/run")):
        other.locator("button.edit-key", has_text="boost").click()
    expect(other.locator(".key-status")).to_contain_text("next-token prediction", timeout=SWAP_MS)
    assert viewport_holds(page, other.locator(".key-status"))
    assert card.locator(".key-status").text_content() == ""
    assert page.input_value("#edits") == f"{key} x0; {other.get_attribute('data-key')} x10"


MISSING_GLYPHS = """() => {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 48;
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const draw = (character, font) => {
    context.clearRect(0, 0, 48, 48);
    context.font = font;
    context.textBaseline = "top";
    context.fillText(character, 4, 4);
    return context.getImageData(0, 0, 48, 48).data.join();
  };
  const boxes = [];
  document.querySelectorAll("#keys .key-card *").forEach((element) => {
    const font = getComputedStyle(element).font;
    const box = draw("\\u{10FFFD}", font);  // a private-use code point: no font draws it
    for (const node of element.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      for (const character of node.textContent) {
        if (character.codePointAt(0) > 0x7e && draw(character, font) === box) boxes.push(node.textContent);
      }
    }
  });
  return boxes;
}"""


def test_no_token_is_drawn_as_a_missing_glyph_box(page, server_url):
    """Key 178 of layer 1 has "##중" (U+C911) among its value's top tokens: where no font draws it,
    it shows as its escape, named in its title, never as a box ("##▯")."""
    open_ff(page, server_url, LANGUAGE_MODEL)
    page.fill("#ff-keys input[name=key]", "178")
    with page.expect_response(lambda response: "/ff/keys" in response.url):
        page.select_option("#ff-keys select[name=layer]", "1")
    expect(page.locator("#keys .key-card").first).to_have_attribute("data-key", "layers.1.ff:178", timeout=SWAP_MS)
    chip = page.locator("#keys .value-tokens .token", has_text=re.compile(r"^##(\uc911|\\uc911)$"))
    expect(chip).to_have_count(1)
    # The page checks glyphs once htmx has settled the swap, a moment after the card is in place.
    expect(chip).to_have_class(re.compile(r"\bglyphs-checked\b"), timeout=SWAP_MS)
    assert "U+C911 HANGUL SYLLABLE JUNG" in chip.get_attribute("title")
    assert page.evaluate(MISSING_GLYPHS) == []
