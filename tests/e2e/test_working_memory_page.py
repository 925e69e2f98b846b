"""The Working memory page in a real browser on the shipped working-memory
checkpoints: memory inline, decisions, the mask as a live toggle, Russian
input, and a corpus upload with the memory-content plots."""

from __future__ import annotations

import json
import re

from tests.e2e.conftest import upload_demo_corpus

GERMAN_MODEL = "working_memory_de_en"
RUSSIAN_MODEL = "working_memory_ru_en"
GERMAN = "Ein Mann in einem blauen Hemd steht auf einer Leiter und putzt ein Fenster."
RUSSIAN = "Я не знаю, где она живёт."


def open_memory(page, server_url, model, text):
    page.goto(f"{server_url}/memory?model={model}")
    page.fill("textarea[name=text]", text)
    page.click("#memory button[type=submit]")
    page.wait_for_selector("#figure-decisions .main-svg", timeout=60_000)


def memory_mass(page) -> list[int]:
    """Per head, % of target attention on memory, as the heatmap title states it."""
    title = json.loads(page.text_content("#figure-data-memory-attention"))["layout"]["title"]["text"]
    return [int(x) for x in re.search(r"mean over target queries: ([\d, ]+)", title).group(1).split(", ")]


def test_memory_inline_decisions_and_live_mask(page, server_url):
    open_memory(page, server_url, GERMAN_MODEL, GERMAN)
    memory = page.locator("#stream-plain .wm-token")
    assert memory.count() >= 1, "the trained model writes memory for this sentence"
    assert page.text_content("#memory-count-plain") == str(memory.count())
    assert page.locator("#steps tbody tr.wm-row").count() == memory.count()
    assert page.text_content("#translation-plain").strip()
    with page.expect_response(lambda response: response.url.endswith("/memory/run")):
        page.select_option("select[name=layer]", "1")  # layer 0 barely reads memory; layer 1 does
    page.wait_for_function("JSON.parse(document.getElementById('figure-data-memory-attention').textContent).layout.title.text.includes('layer 1')")
    assert max(memory_mass(page)) > 0
    with page.expect_response(lambda response: response.url.endswith("/memory/run")):
        page.check("input[name=mask_memory]")
    page.wait_for_selector("#stream-lesioned")
    assert "memory masked" in page.text_content(".translations")
    assert memory_mass(page) == [0] * len(memory_mass(page))


def test_russian_input_and_cyrillic_display(page, server_url):
    open_memory(page, server_url, RUSSIAN_MODEL, RUSSIAN)
    assert page.text_content(".translations .source") == RUSSIAN
    assert "Russian text" in page.text_content("#memory")
    assert page.text_content("#translation-plain").strip()


def test_corpus_upload_shows_memory_analyses(page, server_url, tmp_path):
    upload_demo_corpus(page, server_url, GERMAN_MODEL, tmp_path)
    page.wait_for_selector("#bleu-masked", timeout=120_000)
    assert page.locator("#memory-sentences tbody tr").count() == 6
    for figure in ("unique-tokens", "diversity", "words-in-memory", "parts-of-speech"):
        page.wait_for_selector(f"#figure-{figure} .main-svg")
