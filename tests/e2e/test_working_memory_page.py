"""The Working memory page in a real browser on the shipped working-memory
checkpoints: memory inline, decisions, the mask as a live toggle, Russian
input, a corpus upload with the memory-content plots, the measured example
sentences, what every lesion did (or why it could not), forced memory, and
the page a model without working memory gets."""

from __future__ import annotations

import json
import re

import sacrebleu

from inference.core.places import MEMORY_EXAMPLES_FILE
from tests.e2e.conftest import open_page, swap, upload_demo_corpus, wait_until

GERMAN_MODEL = "working_memory_de_en"
RUSSIAN_MODEL = "working_memory_ru_en"
GERMAN = "Ein Mann in einem blauen Hemd steht auf einer Leiter und putzt ein Fenster."
RUSSIAN = "Я не знаю, где она живёт."


def open_memory(page, server_url, model, text):
    open_page(page, f"{server_url}/memory?model={model}")
    page.fill("textarea[name=text]", text)
    swap(page, page.click, "#memory button[type=submit]")


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
    wait_until(
        page,
        "() => JSON.parse(document.getElementById('figure-data-memory-attention').textContent)"
        ".layout.title.text.includes('layer 1')",
    )
    assert max(memory_mass(page)) > 0
    with page.expect_response(lambda response: response.url.endswith("/memory/run")):
        page.check("input[name=lesion][value=mask_memory]")
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
    rows = page.locator("#memory-sentences tbody tr")
    translations = rows.locator("td:nth-child(4)").all_text_contents()
    references = rows.locator("td:nth-child(5)").all_text_contents()
    # The as-trained chrF the page states, recomputed from the translations and references it shows.
    assert page.text_content("#chrf") == f"{sacrebleu.corpus_chrf(translations, [references]).score:.2f}"
    scores, sentences = page.locator("#quality").bounding_box(), page.locator("#memory-sentences").bounding_box()
    assert scores and sentences and scores["y"] + scores["height"] <= sentences["y"], "the scores sit above the table"
    for figure in ("unique-tokens", "diversity", "words-in-memory", "parts-of-speech"):
        page.wait_for_selector(f"#figure-{figure} .main-svg")


# ---------------------------------------------------------------- every control acts, or the page says why not

NO_MEMORY = "Ein Hund rennt mit einem Ball im Maul über die Wiese."  # writes no memory with seed 0


def shipped_examples(model: str) -> list[dict]:
    return json.loads(MEMORY_EXAMPLES_FILE.read_text(encoding="utf-8"))["models"][model]["examples"]


def rerun(page, action) -> None:
    swap(page, action)


def set_memory_size(page, size: int) -> None:
    page.locator("input[name='memory_size.size']").evaluate(
        "(e, size) => { e.value = size; e.dispatchEvent(new Event('change', {bubbles: true})); }", size
    )


def lesioned_text(page) -> str:
    return " ".join(
        page.locator("#translation-lesioned .diff-same, #translation-lesioned .diff-added").all_text_contents()
    )


def test_an_input_without_memory_says_so_and_force_memory_writes_it(page, server_url):
    open_memory(page, server_url, GERMAN_MODEL, NO_MEMORY)
    assert page.locator("#stream-plain .wm-token").count() == 0
    assert "This input wrote no memory tokens with seed 0" in page.text_content("#no-memory-note")
    assert page.locator("#figure-memory-attention").count() == 0 and "wrote no memory tokens" in page.text_content(
        "#attention-note"
    )
    rerun(page, lambda: page.check("input[name=lesion][value=mask_memory]"))
    assert (
        page.text_content("#lesion-outcome")
        == "Nothing changed: this input wrote no memory tokens, so memory size and mask have nothing to act on."
    )
    assert "differences marked" not in page.text_content(".translations")
    rerun(page, lambda: page.uncheck("input[name=lesion][value=mask_memory]"))
    page.fill('input[name="force_memory.tokens"]', "Katze")  # the kind's field, from its model: words
    assert page.is_checked("input[name=lesion][value=force_memory]")  # typing its one required field asks for it
    rerun(page, lambda: page.press('input[name="force_memory.tokens"]', "Tab"))  # leaving the field runs it
    assert page.locator("#stream-lesioned .wm-token").all_text_contents() == ["Katze"]
    assert page.locator("#steps tbody tr.wm-row td:nth-child(3)").all_text_contents() == ["memory (forced)"]
    assert page.text_content("#lesion-outcome").startswith("The translation changed")
    assert page.locator("#translation-lesioned .diff-added, #translation-lesioned .diff-removed").count() > 0
    page.wait_for_selector("#figure-memory-attention .main-svg")


def test_the_shipped_examples_write_their_measured_memory_and_the_lesions_act(page, server_url):
    open_page(page, f"{server_url}/memory?model={GERMAN_MODEL}")
    examples = shipped_examples(GERMAN_MODEL)
    links = page.locator("#memory-examples a.memory-example")
    assert links.all_text_contents() == [e["source"] for e in examples]
    example = examples[0]
    links.first.click()
    page.wait_for_selector("#figure-decisions .main-svg", timeout=60_000)
    assert page.input_value("textarea[name=text]") == example["source"]
    assert page.locator("#stream-plain .wm-token").all_text_contents() == example["memory"]
    assert page.text_content("#translation-plain") == example["translation"]
    page.wait_for_selector("#figure-memory-attention .main-svg")
    heatmap = json.loads(page.text_content("#figure-data-memory-attention"))["data"][0]
    assert len(heatmap["x"]) == example["memory_tokens"]  # one column per memory token
    rerun(page, lambda: page.check("input[name=lesion][value=mask_memory]"))
    assert lesioned_text(page).split() == example["masked"].split()
    changed = example["masked"] != example["translation"]
    assert ("differences marked" in page.text_content("#lesion-outcome")) == changed
    assert "0% by construction" in page.text_content("#attention-note")
    rerun(page, lambda: page.uncheck("input[name=lesion][value=mask_memory]"))
    rerun(page, lambda: set_memory_size(page, 0))
    assert page.locator("#stream-lesioned .wm-token").count() == 0
    assert lesioned_text(page).split() == example["no_memory"].split()
    assert ("differences marked" in page.text_content("#lesion-outcome")) == (
        example["no_memory"] != example["translation"]
    )


def test_the_russian_examples_write_memory(page, server_url):
    open_page(page, f"{server_url}/memory?model={RUSSIAN_MODEL}")
    example = shipped_examples(RUSSIAN_MODEL)[0]
    page.click(f"#memory-examples a.memory-example >> text={example['source']}")
    page.wait_for_selector("#figure-decisions .main-svg", timeout=60_000)
    assert page.text_content("#memory-count-plain") == str(example["memory_tokens"]) != "0"


def test_a_model_without_working_memory_gets_a_page_that_links_to_the_suitable_ones(page, server_url):
    for model, status in (
        ("transformer", 400),
        ("memtransformer_10", 400),
        ("language_model", 400),
        ("no_such_model", 404),
    ):
        response = page.goto(f"{server_url}/memory?model={model}")
        assert response.status == status
        assert page.locator("select[name=model]").count() == 0  # no other model's page in its place
        assert page.locator("#suitable-models a").all_text_contents() == [GERMAN_MODEL, RUSSIAN_MODEL]
    page.click(f"#suitable-models a >> text={RUSSIAN_MODEL}")
    assert page.input_value("select[name=model]") == RUSSIAN_MODEL and "Russian text" in page.text_content("#memory")
