"""The Segments page in a real browser over briefly trained task models:
each control changes what it should (segment, layer and head redraw the
map; every memory lesion adds the lesioned and changed rows to the strip),
and the figures keep their shape through the swaps with no button covered."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from inference.core.places import REPO_ROOT
from tests.e2e.conftest import open_page, serve, swap
from tests.e2e.test_layout import assert_layout
from training.tasks.rmt_tasks import task_split, text

STREAM = text(task_split("reverse", "test", 1)[0].stream)
DONOR = text(task_split("reverse", "test", 2)[1].stream)


@pytest.fixture(scope="module")
def segments_server(segment_checkpoints, tmp_path_factory):
    with serve(segment_checkpoints, tmp_path_factory.mktemp("segments_db") / "memlens.sqlite3") as url:
        yield url


def open_segments(page, url: str, model: str = "rmt") -> None:
    open_page(page, f"{url}/segments?model={model}&text={urllib.parse.quote(STREAM)}")
    page.wait_for_selector("#figure-segment .main-svg", timeout=90_000)


def type_number(page, name: str, value: str) -> None:
    """Type into a number field and leave it, as a person does: the change re-runs the model."""
    page.fill(f"input[name='{name}']", value)
    page.press(f"input[name='{name}']", "Tab")


def type_text(page, name: str, value: str) -> None:
    """Type into a text box and leave it."""
    page.fill(f"textarea[name='{name}']", value)
    page.press(f"textarea[name='{name}']", "Tab")


def box(page, selector: str) -> tuple[int, int]:
    found = page.locator(selector).bounding_box()
    return round(found["width"]), round(found["height"])


def strip_rows(page) -> list[str]:
    """The strip's row names as a person reads them, top to bottom."""
    ticks = page.locator("#figure-strip .ytick text")
    rows = [(ticks.nth(i).bounding_box()["y"], ticks.nth(i).text_content()) for i in range(ticks.count())]
    return [name.split(" ")[0] for _, name in sorted(rows)]


def test_segment_layer_and_head_redraw_the_map_which_keeps_its_shape(page, segments_server):
    open_segments(page, segments_server)
    assert page.text_content("#figure-segment .gtitle") == "attn layer 0 head 0, segment 0"
    assert_layout(page, figures=4)
    strip = box(page, "#figure-strip")
    swap(page, type_number, page, "segment", "1")
    assert page.text_content("#figure-segment .gtitle") == "attn layer 0 head 0, segment 1"
    swap(page, page.select_option, "select[name=layer]", "1")
    swap(page, page.select_option, "select[name=head]", "1")
    assert page.text_content("#figure-segment .gtitle") == "attn layer 1 head 1, segment 1"
    assert box(page, "#figure-strip") == strip  # the strip is the same run: same shape
    assert_layout(page, figures=4)


@pytest.mark.parametrize(
    ("control", "value"),
    [
        ("reset_memory.segment", "1"),
        ("noise_memory.segment", "1"),
        ("knockout", None),
        ("transplant_memory.segment", "2"),
    ],
)
def test_every_memory_lesion_adds_the_lesioned_and_changed_rows(page, segments_server, control, value):
    open_segments(page, segments_server)
    assert strip_rows(page) == ["plain"]
    if control == "knockout":
        swap(page, page.check, "input[name='knockout_slots.slots'][value='1']")
    elif control == "transplant_memory.segment":
        swap(page, type_text, page, "transplant_memory.donor", DONOR)  # its segment still empty: a plain run
        assert strip_rows(page) == ["plain"] and not page.is_checked("input[name=lesion][value=transplant_memory]")
        swap(page, type_number, page, control, value)
    else:
        swap(page, type_number, page, control, value)
    assert strip_rows(page) == ["plain", "lesioned", "changed"]
    said = {
        "reset_memory.segment": "memory reset at segment 1",
        "noise_memory.segment": "noise of scale 0.5 added to the memory at segment 1 (seed 0)",
        "knockout": "memory slot 1 knocked out",
        "transplant_memory.segment": "another input's memory transplanted into segment 2",
    }
    assert page.text_content(".lesion-note").startswith(said[control] + ": ")
    assert page.locator("#accuracy-lesioned").is_visible()
    assert_layout(page, figures=4)


def test_a_lesion_out_of_range_is_said_on_the_page(page, segments_server):
    open_segments(page, segments_server)
    type_number(page, "reset_memory.segment", "9")
    page.wait_for_selector("#errors .error", timeout=30_000)
    assert "reset at segment 9: this input has 3 segments" in page.text_content("#errors .error")


def test_transformer_xl_shows_its_cache_and_no_lesion_controls(page, segments_server):
    open_segments(page, segments_server, model="xl")
    swap(page, type_number, page, "segment", "2")
    labels = page.locator("#figure-segment .annotation-text").all_text_contents()
    assert "sequence → cache" in labels and page.locator("input[name='reset_memory.segment']").count() == 0
    assert_layout(page, figures=2)


def test_memory_added_to_the_shipped_gpt2_copies_until_it_is_reset(page, server_url):
    """The GPT-2 trained here with memory added, on the copy task: every target character right as trained; the
    memory reset at segment 1 loses most of them, and the page says so with the figures keeping their shape."""
    config = json.loads((REPO_ROOT / "checkpoints" / "gpt2_copy_memory10" / "config.json").read_text())
    example = urllib.parse.quote(config["meta"]["example"])
    open_page(page, f"{server_url}/segments?model=gpt2_copy_memory10&text={example}")
    page.wait_for_selector("#figure-segment .main-svg", timeout=90_000)
    assert page.text_content("#accuracy-plain").strip() == "100.0%"
    assert_layout(page, figures=4)
    swap(page, type_number, page, "reset_memory.segment", "1")
    assert strip_rows(page) == ["plain", "lesioned", "changed"]
    assert page.text_content(".lesion-note").startswith("memory reset at segment 1: ")
    assert float(page.text_content("#accuracy-lesioned").strip().rstrip("%")) < 50
    assert_layout(page, figures=4)


def overlaps(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and (b["y"] < a["y"] + a["height"])
    )


def test_the_shipped_rmt_language_model_states_what_its_memory_is_worth(page, server_url):
    """The RMT language model's offline measurement stands above the live controls, read whole (it wraps inside
    the page, covering no control), and stays through a lesion's swap."""
    open_page(page, f"{server_url}/segments?model=rmt10_enwiki_10000steps")
    page.wait_for_selector("#figure-segment .main-svg", timeout=90_000)
    line = page.locator("#carried-state")
    assert line.is_visible()
    assert "+5.51 [+4.84, +6.15]" in line.text_content() and "the model uses what it carries" in line.text_content()
    box = line.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= page.viewport_size["width"]
    for control in ("#segments button[type=submit]", "textarea[name=text]", "select[name=model]"):
        assert not overlaps(box, page.locator(control).bounding_box()), control
    swap(page, type_number, page, "reset_memory.segment", "1")
    assert strip_rows(page) == ["plain", "lesioned", "changed"]
    assert page.locator("#carried-state").bounding_box() == box
    assert_layout(page, figures=4)
