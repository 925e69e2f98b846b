"""The Focus page in a real browser over the shipped paper-001 translators:
the Extended Neural GPU's attribution map beside the GRU's attribution and
attention maps, drawn with the sentence's tokens on the axes; dropping the
second model re-runs with one map; figures keep their shape through the
swaps and no button is covered."""

from __future__ import annotations

from tests.e2e.conftest import open_page, swap, wait_until
from tests.e2e.test_layout import assert_layout

SENTENCE = "Ein Hund rennt über die Wiese."


def open_focus(page, url: str) -> None:
    open_page(page, f"{url}/focus?model=extended_neural_gpu_de_en&text=Ein%20Hund%20rennt%20%C3%BCber%20die%20Wiese.")
    wait_until(page, "() => document.querySelectorAll('[data-figure] .main-svg').length >= 6", timeout=90_000)


def ticks(page, figure: str, axis: str) -> list[str]:
    """An axis's labels ("3 across"), in token order."""
    found = [t.strip() for t in page.locator(f"#figure-{figure} .{axis}tick text").all_text_contents()]
    return sorted(found, key=lambda label: int(label.split(" ", 1)[0]))


def test_the_two_ways_of_focusing_are_drawn_side_by_side(page, server_url):
    open_focus(page, server_url)
    assert page.locator("[data-figure]").count() == 3
    for figure in ("attribution-0", "attribution-1", "attention-1"):
        assert ticks(page, figure, "x")[:2] == ["0 Ein", "1 Hund"]
    rows = ticks(page, "attribution-1", "y")  # one row per output token of the GRU, its EOS last
    assert len(rows) == len(ticks(page, "attention-1", "y")) >= 3 and rows[-1].endswith("<eos>")
    output = page.text_content(".focus-row[data-model=gru_attention_de_en] .output").split()
    assert [row.split(" ", 1)[1] for row in rows[:-1]] == output  # the shown output, token by token
    assert page.locator(".focus-row").count() == 2
    assert "no attention" in page.text_content(".focus-row[data-model=extended_neural_gpu_de_en]")
    assert_layout(page, figures=3)


def test_one_model_alone_and_back_keeps_the_layout(page, server_url):
    open_focus(page, server_url)
    size = page.locator("#figure-attribution-0").bounding_box()
    page.select_option("select[name=other]", "")
    swap(page, page.click, "#focus button[type=submit]")
    assert page.locator("[data-figure]").count() == 1 and page.locator(".focus-row").count() == 1
    page.select_option("select[name=other]", "gru_attention_de_en")
    page.select_option("select[name=steps]", "8")
    swap(page, page.click, "#focus button[type=submit]")
    assert page.locator("[data-figure]").count() == 3
    again = page.locator("#figure-attribution-0").bounding_box()
    assert (round(again["width"]), round(again["height"])) == (round(size["width"]), round(size["height"]))
    assert "with 8 integration steps" in page.text_content(".focus-summary")
    assert_layout(page, figures=3)
