"""The first ten minutes in the browser, walked as a newcomer walks them: from the home page, each page opened from
the navigation bar at 1400x900, its main interaction done with the defaults alone (no typing), and then a result
inside the viewport, no figure overlapping another or covering a button, no console error, and no accessibility
violation (axe-core) before or after the interaction."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe

from tests.e2e.conftest import DRAWN, QUIET, wait_until
from tests.e2e.test_layout import COVERED_BUTTONS, FIGURE_PROBLEMS

VIEWPORT = {"width": 1400, "height": 900}
AXE = Axe()

IN_VIEW = """(selector) => {
  const element = document.querySelector(selector);
  if (!element) return `${selector}: not on the page`;
  const box = element.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) return `${selector}: not shown`;
  if (box.top >= innerHeight || box.bottom <= 0 || box.left >= innerWidth || box.right <= 0) {
    return `${selector}: at ${Math.round(box.top)} px, outside the ${innerHeight} px viewport`;
  }
  return "";
}"""


@pytest.fixture
def walker(browser):
    """A fresh 1400x900 page that records console errors, page errors and CSP violations."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    yield page, problems
    context.close()


def settle(page) -> None:
    """Wait until no htmx request is in flight and every figure on the page is drawn."""
    page.wait_for_timeout(300)  # a load-triggered request starts
    # Focus runs integrated gradients for two models: minutes on a loaded machine
    wait_until(page, f"() => {QUIET} && !document.querySelector('#busy.htmx-request, .htmx-request') && {DRAWN}",
               timeout=300_000)  # fmt: skip


def accessible(page, when: str) -> None:
    violations = AXE.run(page).response["violations"]
    found = [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:3]]}" for v in violations]
    assert not found, f"{page.url} {when}: axe finds {found}"


def shows(page, selector: str) -> None:
    """A result at `selector` inside the viewport, nothing overlapping, no button covered, no error shown."""
    errors = page.locator("#errors .error, .error[role=alert]")
    assert errors.count() == 0, errors.first.text_content()
    assert page.evaluate(IN_VIEW, selector) == ""
    assert page.evaluate(FIGURE_PROBLEMS) == []
    assert page.evaluate(COVERED_BUTTONS) == []


def open_from_nav(page, server_url: str, link: str) -> None:
    page.goto(server_url)
    page.click(f"header nav a:text-is('{link}')")
    settle(page)


def interact(page, action) -> None:
    action()
    settle(page)


def upload_three_sentences(page, folder: Path) -> None:
    corpus = folder / "drei.txt"
    corpus.write_text("Ein Hund läuft.\nZwei Männer spielen Fußball im Park.\nEine Frau liest ein Buch.\n")
    page.set_input_files("input[name=file]", str(corpus))
    page.click("#upload button[type=submit]")
    page.wait_for_url("**/results/*")
    wait_until(page, "() => document.querySelector('table.sentences')", timeout=120_000)
    settle(page)


def click(selector: str):
    return lambda page: page.click(selector)


def tick(selector: str):
    return lambda page: page.set_checked(selector, True)


def choose(selector: str, **option):
    return lambda page: page.select_option(selector, **option)


STEPS = {  # nav link -> (what the page shows on opening, the main interaction, what it shows after)
    "Models": (
        "section.starting-points",
        click("text=The translation breaking as memory is knocked out"),
        "#translation-lesioned",
    ),
    "Explore": ("#translation-plain", tick("input[name='knockout_slots.slots'][value='0']"), ".lesion-note"),
    "Working memory": (".stream", tick("input[name=lesion][value=mask_memory]"), ".lesion-note, #translation-lesioned"),
    "Segments": ("#accuracy-plain", tick("input[name='knockout_slots.slots'][value='0']"), ".lesion-note"),
    "State": ("#output-plain", click("button:text-is('carry through 4 bits')"), "#output-plain"),
    "Focus": (".focus-summary", click("#focus button[type=submit]"), ".focus-summary"),
    "FF memories": (".figures", click("#keys button.edit-key >> nth=0"), "#keys .key-status:not(:empty)"),
    "Compare": ("#results table", choose("select[name=decoding]", value="beam"), "#results .decoding-note"),
}


@pytest.mark.parametrize("link", list(STEPS))
def test_a_page_opens_on_a_result_and_its_main_control_answers_in_view(walker, server_url, link):
    page, problems = walker
    opened, action, after = STEPS[link]
    open_from_nav(page, server_url, link)
    shows(page, opened)
    accessible(page, "on opening")
    interact(page, lambda: action(page))
    shows(page, after)
    accessible(page, "after its main interaction")
    assert not problems, problems


def test_upload_opens_on_a_model_that_reads_german_and_shows_the_result_in_view(walker, server_url, tmp_path):
    page, problems = walker
    open_from_nav(page, server_url, "Upload")
    accessible(page, "on opening")
    assert page.locator("select[name=model]").input_value() == "memtransformer_10"
    upload_three_sentences(page, tmp_path)
    shows(page, "table.sentences")
    assert page.locator("table.sentences tbody tr").count() == 3
    accessible(page, "with the result")
    assert not problems, problems


def test_compare_reruns_when_the_decoding_changes(walker, server_url):
    page, _ = walker
    open_from_nav(page, server_url, "Compare")
    assert page.locator("#results .decoding-note").text_content().strip() == "decoded by greedy"
    interact(page, lambda: page.select_option("select[name=decoding]", "beam"))
    assert "beam 4" in page.locator("#results .decoding-note").text_content()
