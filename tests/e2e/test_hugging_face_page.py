"""A researcher's own Hugging Face model in a real browser: the server started with a models folder holding a tiny
GPT-2 (`memlens --models-dir DIR serve`); the home page lists it, its FF memories page shows its keys, and zeroing
keys changes what it predicts, marked in the page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from inference.core.places import REPO_ROOT
from tests.e2e.conftest import open_page, serve, swap
from tests.hugging_face_models import N_LAYERS, build_folder

MODEL = "my_gpt2"
TEXT = "the king saw a dog in the city"


@pytest.fixture(scope="module")
def hf_server(tmp_path_factory):
    models = tmp_path_factory.mktemp("models")
    build_folder("gpt2", models / MODEL)
    database = tmp_path_factory.mktemp("hf_db") / "memlens.sqlite3"
    with serve(REPO_ROOT / "checkpoints", database, [models]) as url:
        yield url


def test_the_home_page_lists_it_and_its_ff_page_shows_keys_and_edits(page, hf_server):
    open_page(page, hf_server)
    link = page.locator(f'a[href="/ff?model={MODEL}"]').first
    assert link.is_visible()
    open_page(page, f"{hf_server}/ff?model={MODEL}")
    page.wait_for_selector("#keys .key-card")
    assert "keys by effect on the text" in page.text_content("#keys")  # no triggers mined, ranked on the example
    with page.expect_response(lambda response: "/ff/keys" in response.url):
        page.select_option("#ff-keys select[name=order]", "index")
    expect(page.locator("#keys .key-card").first).to_have_attribute("data-key", "layers.0.ff:0")
    every_key = ",".join(str(k) for k in range(64))
    page.fill("#edits", "; ".join(f"layers.{layer}.ff:{every_key} x0" for layer in range(N_LAYERS)))
    page.fill("#ff-run textarea[name=text]", TEXT)
    swap(page, lambda: page.click("#ff-run button[type=submit]"))
    page.wait_for_selector("#lens-table tbody tr")
    assert page.text_content("#output-plain").strip()
    changed = page.locator("#prediction-changes tr.changed")
    assert changed.count() >= 1  # zeroing every key changes what the model predicts somewhere
    button = page.locator("#ff-run button[type=submit]")
    box = button.bounding_box()
    assert box is not None and box["width"] > 0 and box["height"] > 0
    on_top = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('button') === document.querySelector("
        "'#ff-run button[type=submit]')",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert on_top  # nothing covers the run button after the swap


def test_explore_shows_its_attention_and_keeps_the_map_through_a_head_ablation(page, hf_server):
    open_page(page, f"{hf_server}/explore?model={MODEL}")
    continuation = page.locator("#continuation-plain")
    assert continuation.is_visible() and continuation.text_content().strip()  # the text it continued with
    heatmap = page.locator("#figure-heatmap .main-svg").first
    before = heatmap.bounding_box()
    assert before is not None and before["width"] > 100 and before["height"] > 100
    assert page.input_value("select[name=stack]") == "attn"
    swap(page, lambda: page.select_option("select[name=layer]", "1"))
    plain = page.text_content("#figure-data-heatmap")
    continuation_before = page.text_content("#continuation-plain")
    assert page.get_attribute("input[name=ablate]", "placeholder") == "layers.0.attn:1, layers.1.attn:3"
    page.fill("input[name=ablate]", "layers.0.attn:1")
    swap(page, lambda: page.dispatch_event("input[name=ablate]", "change"))  # as leaving the field does
    note = page.locator(".lesion-note").first
    assert "layers.0.attn.z head 1 zeroed" in note.text_content() and "changed, marked" in note.text_content()
    lesioned = page.locator("#continuation-lesioned")
    assert lesioned.is_visible()
    marks = page.locator("#continuation-lesioned .diff-added, #continuation-lesioned .diff-removed")
    assert marks.count() >= 1 and marks.first.is_visible()  # the changed words, marked
    assert page.text_content("#continuation-plain") == continuation_before
    assert page.text_content("#figure-data-heatmap") != plain  # layer 1 reads the ablated head's output
    after = page.locator("#figure-heatmap .main-svg").first.bounding_box()
    assert after is not None and (after["width"], after["height"]) == (before["width"], before["height"])


def test_the_text_box_counts_tokens_as_the_reader_types_and_says_when_it_is_too_long(page, hf_server):
    open_page(page, f"{hf_server}/explore?model={MODEL}")
    length = page.locator("#explore .text-length")
    page.wait_for_function("document.querySelector('#explore .text-length').textContent.includes('tokens')")
    with page.expect_response(lambda response: response.url.endswith("/text/length")):
        page.fill("textarea[name=text]", "the king saw a dog")
    assert length.text_content().startswith("5 of 63 tokens")  # one word a token; the window of 64 less BOS
    long_text = " ".join(["the"] * 80)
    with page.expect_response(lambda response: response.url.endswith("/text/length")):
        page.fill("textarea[name=text]", long_text)
    assert page.input_value("textarea[name=text]") == long_text  # nothing cut
    assert "the text has 80 tokens; the limit is 63" in length.text_content() and length.is_visible()
    assert page.locator("#results #continuation-plain").is_visible()  # the earlier result, until a run is refused
    with page.expect_response(lambda response: response.url.endswith("/explore/run")) as refused:
        page.click("#explore button[type=submit]")
    assert refused.value.status == 400
    page.wait_for_function("document.querySelector('#errors').textContent.includes('80 tokens')")
    assert page.locator("#errors").is_visible() and page.locator("#results > *").count() == 0  # no stale result
    button = page.locator("#explore button[type=submit]").bounding_box()
    assert button is not None and button["width"] > 0
    on_top = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('button') === "
        "document.querySelector('#explore button[type=submit]')",
        [button["x"] + button["width"] / 2, button["y"] + button["height"] / 2],
    )
    assert on_top  # the refusal and the length line cover nothing


def test_mining_its_keys_over_a_server_set_shows_the_triggers_in_the_key_browser(page, hf_server):
    open_page(page, f"{hf_server}/ff?model={MODEL}")
    page.click("#mining summary")
    page.select_option("#mine-set select[name=corpus]", "demo")
    with page.expect_navigation():
        page.click("#mine-set button[type=submit]")
    assert page.text_content("h1").startswith("Trigger mining")
    page.wait_for_selector("#browse-mined", timeout=60_000)  # the fragment polls until the job is done
    assert "sentences, top 10 per key" in page.text_content("#mined")
    with page.expect_navigation():
        page.click("#browse-mined")
    page.wait_for_selector("#keys .key-card")
    assert "Trigger examples from mining job" in page.text_content("#mined-note")
    assert page.locator("#keys .key-card ol.triggers li").count() >= 1  # keys that fired on the demo set show where


def test_a_large_models_first_open_shows_its_load_then_opens_the_page(page, tmp_path):
    """With the notice threshold at 0 MB the tiny folder counts as large: the browser is shown what is loading
    (the model and its weights' size, a progress bar), then the page it asked for opens by itself."""
    build_folder("gpt2", tmp_path / "models" / MODEL)
    with serve(REPO_ROOT / "checkpoints", tmp_path / "db.sqlite3", [tmp_path / "models"], load_notice_mb=0) as url:
        page.goto(f"{url}/ff?model={MODEL}")
        expect(page.locator("h1")).to_have_text(f"Loading {MODEL}")
        expect(page.locator("#load-status")).to_contain_text("MB of weights into memory")
        assert page.locator("#load-status progress").is_visible()
        expect(page.locator("h1")).to_have_text("Feed-forward memories", timeout=60_000)  # reloaded by itself
        page.wait_for_selector("#keys .key-card")
        assert page.url == f"{url}/ff?model={MODEL}"
        assert page.locator("select[name=model] option:checked").text_content() == MODEL
