"""What a reader sees on every page as it opens on its example, at 1400 px: no figure title clipped by its
container, no table or strip wider than its box (the page does not scroll sideways, and a strip shows its whole
content), no tick label drawn over a title, every text field wide enough for its placeholder, and each page's
figures within reach (none starting further down than a few screens)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import open_page

PAGES = ["/", "/explore", "/memory", "/ff", "/segments", "/state", "/focus", "/compare", "/upload"]
SCREENS = 2.5  # a figure starting further down than this many window heights is out of a reader's reach

PROBLEMS = """(screens) => {
  const problems = [];
  const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
    && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const viewport = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > viewport + 1) {
    problems.push(`the page is ${document.documentElement.scrollWidth} px wide in a ${viewport} px window`);
  }
  document.querySelectorAll("table").forEach((table, i) => {
    if (!table.checkVisibility()) return;
    const box = table.getBoundingClientRect();
    const holder = table.parentElement.getBoundingClientRect();
    if (box.right > viewport + 1) problems.push(`table ${table.id || i} is wider than the window (${box.right} px)`);
    else if (box.right > holder.right + 1) problems.push(`table ${table.id || i} leaves its box`);
  });
  document.querySelectorAll("[data-figure]").forEach((figure) => {
    const name = figure.id;
    const box = figure.getBoundingClientRect();
    const scroller = figure.closest(".scroll-x") || figure;
    if (scroller.scrollWidth > scroller.clientWidth * 1.25 + 1) {
      problems.push(`${name}: scrolls ${scroller.scrollWidth} px inside a ${scroller.clientWidth} px box`);
    }
    const pageTop = box.top + window.scrollY;
    if (pageTop > screens * window.innerHeight) problems.push(`${name}: starts ${Math.round(pageTop)} px down`);
    const titles = [...figure.querySelectorAll(".gtitle, .g-xtitle, .g-ytitle, .annotation-text")]
      .filter((title) => title.textContent.trim()).map((title) => [title, title.getBoundingClientRect()]);
    const clip = figure.getBoundingClientRect();
    titles.forEach(([title, rect]) => {
      if (rect.top < clip.top - 1 || rect.left < clip.left - 1 || rect.right > clip.right + 1) {
        problems.push(`${name}: title "${title.textContent.trim()}" is clipped by its figure`);
      }
    });
    figure.querySelectorAll(".xtick text, .ytick text, .xtick2 text, .ytick2 text").forEach((tick) => {
      const rect = tick.getBoundingClientRect();
      if (!tick.textContent.trim() || !rect.width) return;
      titles.forEach(([title, titleRect]) => {
        if (overlap(rect, titleRect)) {
          problems.push(`${name}: tick label "${tick.textContent.trim()}" is drawn over "${title.textContent.trim()}"`);
        }
      });
    });
  });
  const canvas = document.createElement("canvas").getContext("2d");
  document.querySelectorAll("input[type=text][placeholder], input:not([type])[placeholder]").forEach((input) => {
    if (!input.checkVisibility()) return;
    const style = getComputedStyle(input);
    canvas.font = style.font;
    const needed = canvas.measureText(input.placeholder).width;
    const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    if (needed > room + 1) {
      problems.push(`input ${input.name}: ${Math.round(room)} px for its ${Math.round(needed)} px placeholder`);
    }
  });
  return problems;
}"""


@pytest.mark.parametrize("path", PAGES)
def test_a_page_opened_on_its_example_is_laid_out_for_a_reader(page, server_url, path):
    open_page(page, f"{server_url}{path}")
    problems = page.evaluate(PROBLEMS, SCREENS)
    assert not problems, "\n".join(problems)


def test_the_checks_see_each_kind_of_defect(page, server_url):
    """Each check finds the defect it names when one is made on a real page."""
    open_page(page, f"{server_url}/explore")
    page.evaluate("""() => {
      const input = document.querySelector("input[type=text][placeholder]");
      input.style.minWidth = "0";
      input.style.width = "40px";
      const table = document.createElement("table");
      table.id = "too-wide";
      table.innerHTML = "<tr><td style='min-width: 3000px'>wide</td></tr>";
      document.querySelector("main").append(table);
    }""")
    found = page.evaluate(PROBLEMS, SCREENS)
    assert any("placeholder" in problem for problem in found), found
    assert any("table too-wide is wider than the window" in problem for problem in found), found
    assert any("the page is" in problem for problem in found), found
