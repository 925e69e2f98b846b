"""Explore in a real browser: translate, see heatmaps, lesion live, stay safe."""

from __future__ import annotations

import base64
import json

from tests.e2e.conftest import open_page, swap, wait_until
from tests.e2e.test_layout import assert_layout

MODEL = "memtransformer_10"
SENTENCE = "Ein Hund rennt mit einem Ball im Maul über die Wiese."


def open_explore(page, server_url):
    open_page(page, f"{server_url}/explore?model={MODEL}")
    page.fill("textarea[name=text]", SENTENCE)
    swap(page, page.click, "button[type=submit]")


def heatmap_keys(page) -> list[str]:
    return json.loads(page.text_content("#figure-data-heatmap"))["data"][0]["x"]


def test_translate_and_see_heatmaps(page, server_url):
    open_explore(page, server_url)
    translation = page.text_content("#translation-plain").strip()
    assert translation and "dog" in translation.lower()
    assert page.locator("#figure-grid .main-svg").count() >= 1
    assert page.locator("#figure-blocks .main-svg").count() >= 1
    assert page.locator("#figure-heatmap .heatmaplayer").count() == 1
    assert any("[mem0]" in key for key in heatmap_keys(page))


def test_memory_slider_changes_translation_and_heatmaps(page, server_url):
    open_explore(page, server_url)
    keys_before = heatmap_keys(page)
    assert sum("[mem" in key for key in keys_before) == 10
    slider = page.locator("input[name='memory_size.size']")
    with page.expect_response(lambda response: response.url.endswith("/explore/run")):
        slider.fill("0")  # fires input and change, as a released drag does
    page.wait_for_selector("#translation-lesioned")
    assert page.text_content("fieldset[data-kind=memory_size] .slider-value") == "0"
    assert page.is_checked("input[name=lesion][value=memory_size]")  # moving the slider asked for the lesion
    keys_after = heatmap_keys(page)
    assert not any("[mem" in key for key in keys_after)
    assert len(keys_after) == len(keys_before) - 10
    assert page.text_content(".lesion-note").startswith("no memory (size 0): ")
    page.wait_for_selector("#figure-heatmap .main-svg")  # drawn after the swap settles, with the page's other figures


def test_script_in_input_shows_as_text(page, server_url):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_page(page, f"{server_url}/explore?model={MODEL}")
    attack = "<img src=x onerror=alert(1)>"
    page.fill("textarea[name=text]", attack)
    swap(page, page.click, "button[type=submit]")
    assert page.text_content(".translations .source") == attack
    assert page.locator(".translations img").count() == 0
    page.hover("#figure-heatmap .nsewdrag")  # hover labels render tokens too
    page.wait_for_timeout(300)
    assert dialogs == []


def test_bad_input_shows_an_error_in_the_page(page, server_url):
    open_page(page, f"{server_url}/explore?model={MODEL}")
    page.fill("textarea[name=text]", "   ")
    page.click("button[type=submit]")
    page.wait_for_selector("#errors .error")
    assert "the text is empty" in page.text_content("#errors")


def test_beam_search_finds_the_translation_greedy_decoding_gets_wrong(page, server_url):
    open_page(page, f"{server_url}/explore?model={MODEL}")
    page.fill("textarea[name=text]", "Ein Junge springt.")
    swap(page, page.click, "#explore button[type=submit]")
    assert page.text_content("#translation-plain").strip() == "A boy is jumping jumping."
    assert page.text_content("#decoded-by").strip() == "decoded by greedy"
    with page.expect_response(lambda response: response.url.endswith("/explore/run")):
        page.select_option("select[name=decoding]", "beam")
    wait_until(page, "() => document.querySelector('#decoded-by').textContent.includes('beam')", timeout=30_000)
    assert page.text_content("#translation-plain").strip() == "A boy is jumping."
    assert page.text_content("#decoded-by").strip() == "decoded by beam 4, length penalty 0.6"


def heatmap_max(page) -> int:
    z = json.loads(page.text_content("#figure-data-heatmap"))["data"][0]["z"]  # Plotly's binary array of uint8 percent
    return max(base64.b64decode(z["bdata"]))


def test_scaling_a_hook_point_reruns_and_the_views_follow(page, server_url):
    open_explore(page, server_url)
    assert page.input_value("select[name=stack]") == "encoder.attn" and page.input_value("select[name=layer]") == "0"
    assert heatmap_max(page) > 0
    page.click("details.more-lesions > summary")  # the scale kind is folded under the model's other kinds
    with page.expect_response(lambda response: response.url.endswith("/explore/run")):
        page.select_option("select[name='scale.hook']", "encoder.layers.0.attn.pattern")  # by the default factor, 0
    page.wait_for_selector("#translation-lesioned")
    assert page.text_content("#translation-plain").strip() and heatmap_max(page) == 0


def test_a_knock_out_of_slots_the_slider_removes_asks_for_nothing(page, server_url):
    """Knocking out slot 7 ticks its kind; the memory-size slider moved below it hides and unticks the slot, and the
    kind with it: the run that follows is the memory size alone, not a knock-out of no slot."""
    open_explore(page, server_url)
    swap(page, page.check, "input[name='knockout_slots.slots'][value='7']")
    assert page.is_checked("input[name=lesion][value=knockout_slots]")
    assert page.text_content(".lesion-note").startswith("memory slot 7 knocked out")
    assert_layout(page, figures=3)
    slider = page.locator("input[name='memory_size.size']")
    swap(page, slider.fill, "5")  # fires input and change, as a released drag does
    assert not page.is_checked("input[name=lesion][value=knockout_slots]")
    assert page.locator("input[name='knockout_slots.slots'][value='7']").is_hidden()
    assert page.text_content(".lesion-note").startswith("memory size 5 (trained with 10)")
    assert sum("[mem" in key for key in heatmap_keys(page)) == 5  # the maps follow the 5 slots left
    assert_layout(page, figures=3)  # the lesions' controls, longer now, cover no button and keep the figures' shape
