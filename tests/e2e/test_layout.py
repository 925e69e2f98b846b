"""Layout, not presence: after every kind of htmx swap that re-renders a
figure (and after 1, 2 and 5 of them in a row), each Plotly figure is one
live plot, drawn with Plotly's default template, whose SVG layers overlay
each other inside its container, and no figure covers a button."""

from __future__ import annotations

import base64
import html
import json

import numpy as np
import pytest

from tests.conftest import LONG_TEXT
from tests.e2e.conftest import DRAWN, QUIET, open_page, swap, upload_demo_corpus, wait_until

MODEL = "memtransformer_10"
SENTENCES = ["Ein Hund rennt mit einem Ball im Maul über die Wiese.", "Zwei Kinder spielen im Sand am Strand."]
SWAPS = [1, 2, 5]
FIGURE_PROBLEMS = """() => {
  const problems = [];
  const near = (a, b) => Math.abs(a - b) <= 1;
  const figures = [...document.querySelectorAll("[data-figure]")];
  figures.forEach((figure) => {
    const name = figure.id;
    const box = figure.getBoundingClientRect();
    const holder = figure.parentElement.getBoundingClientRect();
    if (!figure.classList.contains("js-plotly-plot")) problems.push(`${name}: lost its js-plotly-plot class`);
    // The pages send figures without Plotly's default template; figures.js puts it back. Its first colour is
    // #636efa, Plotly.js's own #1f77b4.
    const colours = figure._fullLayout && figure._fullLayout.colorway;
    if (!colours || colours[0] !== "#636efa") problems.push(`${name}: drawn without the default template`);
    const sets = figure.querySelectorAll(".svg-container").length;
    if (sets !== 1) problems.push(`${name}: ${sets} sets of layers`);
    const layers = [...figure.querySelectorAll(".main-svg")].map((layer) => layer.getBoundingClientRect());
    if (layers.length < 2) problems.push(`${name}: ${layers.length} SVG layers`);
    layers.forEach((layer, i) => {
      const first = layers[0];
      if (!(near(layer.x, first.x) && near(layer.y, first.y)
            && near(layer.width, first.width) && near(layer.height, first.height))) {
        problems.push(`${name}: layer ${i} at (${layer.x}, ${layer.y}) ${layer.width}x${layer.height} `
          + `does not overlay layer 0 at (${first.x}, ${first.y}) ${first.width}x${first.height}`);
      }
    });
    // Inside its container: within the figure box, or within its scrolled area where the figure scrolls.
    const scrolls = getComputedStyle(figure).overflow !== "visible";
    const width = scrolls ? figure.scrollWidth : box.width, height = scrolls ? figure.scrollHeight : box.height;
    layers.forEach((layer, i) => {
      if (layer.width > width + 1 || layer.height > height + 1) {
        problems.push(`${name}: layer ${i} (${layer.width}x${layer.height}) overflows its ${width}x${height} figure`);
      }
    });
    if (layers.length && !scrolls && !near(box.height, layers[0].height)) {
      problems.push(`${name}: figure ${box.height} px high around a ${layers[0].height} px plot`);
    }
    if (box.left < holder.left - 1 || box.right > holder.right + 1
        || box.top < holder.top - 1 || box.bottom > holder.bottom + 1) {
      problems.push(`${name}: leaves its container`);
    }
    if (box.right > document.documentElement.clientWidth + 1) problems.push(`${name}: wider than the page`);
    figures.forEach((other) => {
      if (other === figure || figure.contains(other) || other.contains(figure)) return;
      const o = other.getBoundingClientRect();
      if (box.left < o.right - 1 && o.left < box.right - 1 && box.top < o.bottom - 1 && o.top < box.bottom - 1) {
        problems.push(`${name}: overlaps ${other.id}`);
      }
    });
  });
  return problems;
}"""

COVERED_BUTTONS = """() => {
  const covered = [];
  const buttons = [...document.querySelectorAll("button, input[type=submit], input[type=button]")];
  buttons.filter((button) => button.checkVisibility() && button.getClientRects().length).forEach((button) => {
    button.scrollIntoView({ block: "center", inline: "center" });
    const box = button.getBoundingClientRect();
    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    if (!(hit && (hit === button || button.contains(hit)))) {
      const by = hit ? hit.outerHTML.slice(0, 120) : "nothing (off the page)";
      covered.push(`"${button.textContent.trim() || button.value}" is covered by ${by}`);
    }
  });
  return covered;
}"""


def assert_layout(page, figures: int) -> None:
    assert page.locator("[data-figure]").count() >= figures
    assert page.evaluate(FIGURE_PROBLEMS) == []
    assert page.evaluate(COVERED_BUTTONS) == []


def explore(page, server_url) -> None:
    open_page(page, f"{server_url}/explore?model={MODEL}")
    page.fill("textarea[name=text]", SENTENCES[0])
    swap(page, page.click, "#explore button[type=submit]")


def submit_sentences(page, form: str, swaps: int) -> None:
    """Submit `form` `swaps` times, alternating two sentences, each run a swap."""
    for i in range(swaps):
        page.fill(f"{form} textarea[name=text]", SENTENCES[i % 2])
        swap(page, page.click, f"{form} button[type=submit]")


@pytest.mark.parametrize("swaps", SWAPS)
def test_explore_runs(page, server_url, swaps):
    open_page(page, f"{server_url}/explore?model={MODEL}")
    submit_sentences(page, "#explore", swaps)
    assert_layout(page, 3)


@pytest.mark.parametrize("swaps", SWAPS)
def test_lesion_toggles(page, server_url, swaps):
    explore(page, server_url)
    for i in range(swaps):
        swap(page, page.set_checked, "input[name='knockout_slots.slots'][value='0']", i % 2 == 0)
    assert_layout(page, 3)


@pytest.mark.parametrize("swaps", SWAPS)
def test_memory_size_changes(page, server_url, swaps):
    explore(page, server_url)
    for size in ["5", "0", "15", "3", "10"][:swaps]:
        swap(page, page.fill, "input[name='memory_size.size']", size)
    assert page.text_content("fieldset[data-kind=memory_size] .slider-value") == size
    assert_layout(page, 3)


@pytest.mark.parametrize("swaps", SWAPS)
def test_attribution(page, server_url, swaps):
    explore(page, server_url)
    for i in range(swaps):
        page.select_option("#attribution-form select[name=position]", str(i))
        swap(page, page.click, "#attribution-form button[type=submit]")
    assert_layout(page, 4)


@pytest.mark.parametrize("swaps", SWAPS)
def test_compare_runs(page, server_url, swaps):
    """Each checked model's row fills in with its translation (each row is its own request), then the figure."""
    open_page(page, f"{server_url}/compare")
    submit_sentences(page, "#compare", swaps)
    checked = page.locator("#compare input[name=models]:checked").count()
    assert page.locator("#results td.compare-translation").count() == checked == 2
    assert page.locator("#results .compare-running").count() == 0
    assert all(text.strip() for text in page.locator("#results td.compare-translation").all_text_contents())
    assert_layout(page, 1)


@pytest.mark.parametrize("swaps", SWAPS)
def test_memory_page_runs(page, server_url, swaps):
    open_page(page, f"{server_url}/memory?model=working_memory_de_en")
    page.fill("#memory textarea[name=text]", SENTENCES[0])
    for i in range(swaps):
        page.fill("#memory input[name=seed]", str(i))
        swap(page, page.click, "#memory button[type=submit]")
    assert_layout(page, 1)


@pytest.mark.parametrize("swaps", SWAPS)
def test_ff_model_switches_runs_and_key_browser(page, server_url, swaps):
    """A model switch swaps the whole page (its study figures included) and loads the key browser."""
    open_page(page, f"{server_url}/ff?model=language_model")
    page.wait_for_selector("#keys .key-card")
    for i in range(swaps):
        model = ["transformer", "language_model"][i % 2]
        swap(page, page.select_option, "select[name=model]", model, settles=2)
    page.fill(
        "#ff-run textarea[name=text]",
        SENTENCES[0] if model == "transformer" else "The city is the capital of the province.",
    )
    swap(page, page.click, "#ff-run button[type=submit]")
    swap(page, page.click, "#keys button.page")
    assert_layout(page, 3)


def test_back_to_a_swapped_page_redraws_live_figures(page, server_url):
    """The model picker swaps the body and pushes the address; going back restores the earlier page, whose
    figures must be live plots again (a hover shows the weight), not a dead copy of their SVG."""
    explore(page, server_url)
    swap(page, page.select_option, "#explore select[name=model]", "memtransformer_5", settles=2)
    assert "model=memtransformer_5" in page.url
    page.go_back()
    wait_until(page, f"() => location.search.includes('model={MODEL}')")
    wait_until(page, f"() => {QUIET} && {DRAWN}")
    assert page.text_content("#translation-plain").strip()
    assert_layout(page, 3)
    page.hover("#figure-heatmap .nsewdrag")
    page.wait_for_selector("#figure-heatmap .hoverlayer .hovertext")
    assert "weight" in page.text_content("#figure-heatmap .hoverlayer")


def test_job_result_after_polling(page, server_url, tmp_path):
    upload_demo_corpus(page, server_url, MODEL, tmp_path)
    wait_until(page, f"() => document.querySelector('#job [data-figure]') && {QUIET} && {DRAWN}", timeout=120_000)
    assert_layout(page, 2)


# Per axis: the tick labels in screen order, and those a person cannot read: closer than a line of text to the
# previous one, or not on screen (inside the figure's own scrolling box) once scrolled to.
TICK_LABELS = """(axis) => {
  const figure = document.getElementById("figure-heatmap");
  // Where a label meets its axis, in page coordinates: key labels start there (rotated about their start), query
  // labels are centred on their row.
  const position = (tick) => {
    const box = tick.getBoundingClientRect();
    return axis === "x" ? box.left + figure.scrollLeft + scrollX : box.top + box.height / 2 + scrollY;
  };
  const ticks = [...figure.querySelectorAll(`.${axis}tick text`)]
    .map((tick) => [position(tick), tick])
    .sort((a, b) => a[0] - b[0]);
  const unreachable = [];
  ticks.forEach(([at, tick], i) => {
    if (i > 0 && at - ticks[i - 1][0] < 12) {
      unreachable.push(`${tick.textContent}: ${at - ticks[i - 1][0]} px after the previous label`);
    }
    tick.scrollIntoView({ block: "center", inline: "center" });
    const box = tick.getBoundingClientRect(), frame = figure.getBoundingClientRect();
    if (!(box.left >= Math.max(0, frame.left) - 1 && box.right <= Math.min(innerWidth, frame.right) + 1
          && box.top >= 0 && box.bottom <= innerHeight)) {
      unreachable.push(`${tick.textContent}: off screen`);
    }
  });
  return { labels: ticks.map(([, tick]) => tick.textContent), unreachable };
}"""


def test_long_input_keeps_every_token_label_reachable(page, server_url):
    open_page(page, f"{server_url}/explore?model={MODEL}")
    page.fill("textarea[name=text]", LONG_TEXT)
    swap(page, page.click, "#explore button[type=submit]")
    assert_layout(page, 3)
    figure = json.loads(page.text_content("#figure-data-heatmap"))["data"][0]
    assert len(figure["x"]) > 110  # 100+ source tokens and 10 memory slots
    for axis, labels in (("x", figure["x"]), ("y", figure["y"])):
        shown = page.evaluate(TICK_LABELS, axis)
        assert shown["labels"] == [html.unescape(label) for label in labels]  # escaped for Plotly, shown as typed
        assert shown["unreachable"] == []
    # The last cell, bottom right, answers a hover with its own query and key.
    page.evaluate("""() => {
      const figure = document.getElementById("figure-heatmap");
      const plot = figure.querySelector(".nsewdrag").getBoundingClientRect();
      figure.scrollLeft = figure.scrollWidth;
      scrollBy(0, plot.bottom - innerHeight + 40);
    }""")
    plot = page.locator("#figure-heatmap .nsewdrag").bounding_box()
    page.mouse.move(
        plot["x"] + plot["width"] * (1 - 0.5 / len(figure["x"])),
        plot["y"] + plot["height"] * (1 - 0.5 / len(figure["y"])),
    )
    page.wait_for_selector("#figure-heatmap .hoverlayer .hovertext")
    hover = page.text_content("#figure-heatmap .hoverlayer")
    query, key = html.unescape(figure["y"][-1]), html.unescape(figure["x"][-1])
    assert f"query (input positions) {query}" in hover and f"key (input positions) {key}" in hover  # with roles


def test_autoscale_reaches_the_heatmap(page, server_url):
    explore(page, server_url)
    assert json.loads(page.text_content("#figure-data-heatmap"))["data"][0]["zmax"] == 100
    swap(page, page.check, "input[name=autoscale]")
    heatmap = json.loads(page.text_content("#figure-data-heatmap"))["data"][0]
    weights = np.frombuffer(base64.b64decode(heatmap["z"]["bdata"]), dtype=np.uint8)
    assert heatmap["zmax"] == max(1, int(weights.max())) < 100
    assert heatmap["colorbar"]["title"]["text"] == "% (head max)"
    assert_layout(page, 3)
