"""The test-only toy family (tests/toy_family) in a real browser: the
Explore page shows one attention map per segment, a segment chosen on the
page is the one drawn, a lesion redraws the maps, and the figures keep their
shape through the swaps."""

from __future__ import annotations

import pytest
import torch

import tests.toy_family  # noqa: F401 (registers the family in this process, where the server runs)
from inference.core.checkpoint import save_checkpoint
from inference.core.family import build_model
from tests.e2e.conftest import open_page, serve, swap
from tests.e2e.test_layout import assert_layout
from tests.toy_family.model import ToySegmentsConfig

MODEL = "toy_segments_model"
TEXT = "zwei Männer spielen Fußball auf der Wiese"


@pytest.fixture(scope="module")
def toy_server(tmp_path_factory, tiny_tokenizer):
    root = tmp_path_factory.mktemp("toy_checkpoints")
    torch.manual_seed(0)
    model = build_model(ToySegmentsConfig(vocab_size=tiny_tokenizer.vocab_size)).eval()
    save_checkpoint(
        root / MODEL, model, tiny_tokenizer, meta={"training_data": "none (random weights)", "state_init": "random"}
    )
    segments = -(-len(tiny_tokenizer.encode_sources([TEXT])[0]) // ToySegmentsConfig().segment_length)
    with serve(root, tmp_path_factory.mktemp("toy_db") / "memlens.sqlite3") as url:
        yield url, segments


def choose_segment(page, segment: int) -> None:
    """Type a segment and leave the field, as a person does: the change redraws the views."""
    page.fill("input[name=call]", str(segment))
    page.press("input[name=call]", "Tab")


def panel_titles(page) -> list[str]:
    return [t.strip() for t in page.locator("#figure-calls .annotation-text").all_text_contents()]


def test_every_segment_is_drawn_and_the_chosen_one_is_the_large_map(page, toy_server):
    url, segments = toy_server
    open_page(page, f"{url}/explore?model={MODEL}")
    page.fill("textarea[name=text]", TEXT)
    swap(page, page.click, "#explore button[type=submit]")
    assert panel_titles(page) == [f"segment {s}" for s in range(segments)]
    assert page.locator("#figure-calls .heatmaplayer .hm").count() == segments  # one drawn map per segment
    assert page.text_content("#figure-heatmap .gtitle").endswith("segment 0")
    assert_layout(page, figures=4)
    size = page.locator("#figure-calls").bounding_box()

    swap(page, choose_segment, page, 2)
    assert page.text_content("#figure-heatmap .gtitle").endswith("segment 2")
    after = page.locator("#figure-calls").bounding_box()
    assert (round(after["width"]), round(after["height"])) == (round(size["width"]), round(size["height"]))
    assert_layout(page, figures=4)


def explored_at(page, url: str, segment: int) -> str:
    """The Explore page run on TEXT with `segment` on view; its large map's data."""
    open_page(page, f"{url}/explore?model={MODEL}")
    page.fill("textarea[name=text]", TEXT)
    swap(page, page.click, "#explore button[type=submit]")
    swap(page, choose_segment, page, segment)
    return page.text_content("#figure-data-heatmap")


def test_a_lesion_on_the_carried_state_redraws_the_maps(page, toy_server):
    url, _ = toy_server
    before = explored_at(page, url, 1)
    page.click("details.more-lesions > summary")  # the scale kind is folded under the model's other kinds
    swap(page, page.select_option, "select[name='scale.hook']", "carry.enter")
    assert "the views show the lesioned run" in page.text_content(".lesion-note")
    assert page.text_content("#figure-data-heatmap") != before
    assert_layout(page, figures=4)


def test_the_toy_lesion_kind_is_a_control_of_its_own_that_redraws_the_maps(page, toy_server):
    """The toy family's own lesion kind (tests/toy_family/lesions.py) is in the form with its bounds, visible and
    clear of the other controls; checking it re-runs the view lesioned and says the lesion in words."""
    url, _ = toy_server
    before = explored_at(page, url, 2)
    kind = page.locator("fieldset.lesion[data-kind=toy_rotate_state]")
    assert kind.is_visible() and "Rotate the carried state" in kind.text_content()
    shift = kind.locator("input[name='toy_rotate_state.shift']")
    assert (shift.get_attribute("min"), shift.get_attribute("max"), shift.input_value()) == ("1", "7", "1")
    swap(page, page.check, "input[name=lesion][value=toy_rotate_state]")
    assert "carried state rotated by 1 slot from segment 0" in page.text_content(".lesion-note")
    assert page.text_content("#figure-data-heatmap") != before
    assert_layout(page, figures=4)
