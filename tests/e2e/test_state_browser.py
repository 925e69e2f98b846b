"""The State page in a real browser over the shipped Neural GPUs: the step
slider and the play button show every step's state without a request, the
lesion controls re-run the model and mark the changed output, an example
button runs its input, and the figures keep their shape through the swaps
with no button or the slider covered."""

from __future__ import annotations

import urllib.parse

from tests.e2e.conftest import open_page, swap, wait_until
from tests.e2e.test_layout import assert_layout

CARRY = "11111110+10000000"  # least significant bit first: 127 + 1
STATE_Z = "(g) => document.getElementById('figure-state').data[g].z"
FRAME_Z = "([step, g]) => JSON.parse(document.getElementById('state-frames').textContent).state[step][g]"
MARK = "() => document.getElementById('figure-change').layout.shapes[0]"


def open_state(page, url: str, model: str = "neural_gpu_addition", text: str = CARRY) -> None:
    open_page(page, f"{url}/state?model={model}&text={urllib.parse.quote(text)}")
    page.wait_for_selector("#figure-state .main-svg", timeout=90_000)
    wait_until(page, "() => document.querySelectorAll('[data-figure] .main-svg').length >= 8")


def box(page, selector: str) -> tuple[int, int]:
    found = page.locator(selector).bounding_box()
    return round(found["width"]), round(found["height"])


def assert_slider_reachable(page) -> None:
    slider = page.locator("#state-step")
    slider.scroll_into_view_if_needed()
    found = slider.bounding_box()
    hit = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).id", [found["x"] + found["width"] / 2, found["y"] + 2]
    )
    assert hit == "state-step", f"the step slider is covered by #{hit}"


def test_the_slider_shows_the_state_of_the_chosen_step(page, server_url):
    open_state(page, server_url)
    assert page.text_content("#state-step-label") == "encoder step 17"
    assert page.text_content("#figure-state .gtitle") == "State after encoder step 17"
    shapes = {name: box(page, f"#figure-{name}") for name in ("state", "change", "update", "reset")}
    page.locator("#state-step").fill("3")
    assert page.text_content("#state-step-label") == "encoder step 3"
    assert page.text_content("#figure-state .gtitle") == "State after encoder step 3"
    for group in range(4):
        assert page.evaluate(STATE_Z, group) == page.evaluate(FRAME_Z, [3, group])
    assert page.evaluate(STATE_Z, 0) != page.evaluate(FRAME_Z, [17, 0])
    mark = page.evaluate(MARK)
    assert (mark["y0"], mark["y1"]) == (2.5, 3.5)
    assert {name: box(page, f"#figure-{name}") for name in shapes} == shapes  # no figure changed its shape
    assert_layout(page, figures=4)
    assert_slider_reachable(page)


def test_play_walks_through_every_step_and_stops_at_the_last(page, server_url):
    open_state(page, server_url)
    page.click("#state-play")
    assert page.text_content("#state-play") == "pause"
    wait_until(page, "() => Number(document.getElementById('state-step').value) >= 2")
    wait_until(page, "() => document.getElementById('state-play').textContent === 'play'", timeout=20_000)
    assert page.input_value("#state-step") == "17"
    assert page.text_content("#state-step-label") == "encoder step 17"
    assert page.evaluate(MARK)["y0"] == 16.5


def test_a_lesion_reruns_and_marks_the_changed_output_keeping_the_figures_shape(page, server_url):
    open_state(page, server_url)
    assert page.text_content("#output-plain") == "000000010"
    change = box(page, "#figure-change")
    page.fill("input[name='edit_state.start']", "3")  # the state edit's fields, from its kind's model
    page.fill("input[name='edit_state.stop']", "6")
    page.fill("input[name='edit_state.from_step']", "10")
    assert not page.is_checked("input[name=lesion][value=edit_state]")  # its mode, which it requires, not chosen
    swap(page, page.select_option, "select[name='edit_state.mode']", "zero")  # the last field it requires: it runs
    assert page.is_checked("input[name=lesion][value=edit_state]")
    assert page.text_content("#output-plain") == "000000010"
    assert page.locator("#output-lesioned .diff-removed, #output-lesioned .diff-added").count() >= 1
    assert page.locator("#output-lesioned").is_visible()
    assert page.text_content(".lesion-note").startswith("state positions 3 to 5 zeroed from step 10: ")
    assert box(page, "#figure-change") == change  # the same input: the same grid
    assert_layout(page, figures=4)
    swap(page, page.uncheck, "input[name=lesion][value=edit_state]")
    assert page.locator("#output-lesioned").count() == 0


def test_an_example_button_runs_its_input(page, server_url):
    open_state(page, server_url)
    swap(page, page.click, "button.example:has-text('carry through 4 bits')")
    assert page.input_value("textarea[name=text]") == "11110000+10000000"
    assert page.text_content("#output-plain") == "000010000"  # 15 + 1, least significant bit first
    assert_layout(page, figures=4)


def test_the_extended_model_shows_its_tape_and_a_switch_back_keeps_the_layout(page, server_url):
    open_state(page, server_url, model="extended_neural_gpu_de_en", text="Ein Hund läuft über die Wiese.")
    assert page.locator("#figure-tape").count() == 1
    assert page.text_content("#state-step-label").startswith("decoder step")
    assert_layout(page, figures=5)
    page.select_option("select[name=model]", "neural_gpu_addition")
    page.wait_for_url("**/state?model=neural_gpu_addition*")
    page.wait_for_selector("#figure-state .main-svg", timeout=90_000)
    assert page.locator("#figure-tape").count() == 0
    assert_layout(page, figures=4)
    assert_slider_reachable(page)
