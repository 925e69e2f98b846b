"""The Working memory page, /api/memory and corpus jobs of a working-memory
model, on a tiny model whose type head leans towards writing memory."""

from __future__ import annotations

import html
import json
import re

import pytest
import sacrebleu
from fastapi.testclient import TestClient
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from app.main import create_app
from inference.core import measured_examples
from inference.core.checkpoint import save_checkpoint
from inference.core.places import MEMORY_EXAMPLES_FILE, REPO_ROOT
from tests.app.conftest import HTMX, lesion_fields
from tests.app.test_jobs import upload, wait_for
from tests.conftest import make_tiny_working_memory
from training.studies.memory_examples import working_memory_checkpoints

WM = "tiny_working_memory"
TEXT = "ein Hund spielt im Park"


def run(client, **form):
    return client.post("/memory/run", data={"model": WM, "text": TEXT, **form}, headers=HTMX)


def forcing(words: str) -> dict[str, str]:
    """The form fields that force the memory to `words` (the working-memory family's force_memory kind)."""
    return {"lesion": "force_memory", "force_memory.tokens": words}


def memory_in(fragment: str, element: str) -> list[str]:
    stream = re.search(rf'id="{element}">(.*?)</span>\n', fragment, re.DOTALL).group(1)
    return re.findall(r'<span class="wm-token" title="memory">(.*?)</span>', stream)


def test_page_offers_the_working_memory_models_and_their_language(client):
    page = client.get("/memory").text
    assert f'<option value="{WM}" selected>' in page and "tiny_transformer" not in page
    assert "Russian text" in page and 'max="6"' in page  # slider up to 2 x trained 3


def test_run_shows_memory_inline_and_one_decision_per_element(client):
    fragment = run(client).text
    memory = memory_in(fragment, "stream-plain")
    assert 0 < len(memory) <= 3
    elements = re.search(r'id="stream-plain">(.*?)</span>\n', fragment, re.DOTALL).group(1).count("<span class=")
    steps = re.search(r'<table class="sentences" id="steps">(.*?)</table>', fragment, re.DOTALL).group(1).count("<tr")
    assert steps - 1 == elements  # header row; the final EOS (or the step budget) ends the stream
    assert 'id="figure-decisions"' in fragment and 'id="figure-memory-attention"' in fragment


def test_seed_reproduces_and_changes_memory(client):
    first = memory_in(run(client, seed=3).text, "stream-plain")
    client.app.state.gateway._recent.clear()  # the second run samples again instead of reading the recent trace
    assert first == memory_in(run(client, seed=3).text, "stream-plain")
    seen = {tuple(memory_in(run(client, seed=s).text, "stream-plain")) for s in range(6)}
    assert len(seen) > 1


def test_lesions_show_as_a_second_run(client, tiny_tokenizer):
    masked = run(client, lesion="mask_memory").text
    assert "memory masked" in masked and 'id="stream-lesioned"' in masked
    forced = run(client, **forcing("Hund")).text
    written = tiny_tokenizer.display_tokens(tiny_tokenizer.encode("Hund"))  # the typed word's pieces, in order
    assert memory_in(forced, "stream-lesioned")[: len(written)] == written
    none = run(client, **lesion_fields(memory_size={"size": 0})).text
    assert memory_in(none, "stream-lesioned") == [] and "memory size 0" in none


@pytest.mark.parametrize(
    ("form", "status", "message"),
    [
        ({"text": "  "}, 400, "the text is empty"),
        (lesion_fields(memory_size={"size": 7}), 400, "Memory size: size 7 is out of range for this model (0 to 6)"),
        (lesion_fields(knockout_slots={"slots": [0]}), 400, "knockout_slots does not apply to this model; it takes"),
        ({"layer": 2}, 400, "layer 2 is out of range"),
        ({"seed": -1}, 422, "seed"),
        (forcing("Hund Park Wiese Kind Frau"), 400, "do not fit a memory of 3"),
        (
            {"model": "tiny_transformer"},
            400,
            "tiny_transformer is not a working-memory model: its views are on the explore (/explore) and FF memories "
            "(/ff) pages; "
            "working-memory models: tiny_working_memory",
        ),
    ],
)
def test_bad_input_is_a_clear_error(client, form, status, message):
    response = run(client, **form)
    assert response.status_code == status and message in response.text
    assert response.headers["HX-Retarget"] == "#errors"


def test_api_memory_returns_stream_steps_and_attention(client):
    body = client.post("/api/memory", json={"model": WM, "text": TEXT, "seed": 1, "layer": 1}).json()
    assert [t["token"] for t in body["stream"] if t["kind"] == "memory"] == body["memory"]
    assert len(body["steps"]) >= len(body["stream"]) and body["steps"][0]["step"] == 1
    weights = body["attention"]["weights"]
    assert weights["shape"] == [2, len(body["attention"]["query_tokens"]), len(body["memory"])]
    masked = client.post(
        "/api/memory", json={"model": WM, "text": TEXT, "seed": 1, "interventions": [{"kind": "mask_memory"}]}
    ).json()
    assert masked["interventions"] == [{"kind": "mask_memory"}]
    knockout = client.post(
        "/api/memory", json={"model": WM, "text": TEXT, "interventions": [{"kind": "knockout_slots", "slots": [0]}]}
    )
    assert knockout.status_code == 400 and knockout.json()["detail"] == (
        "knockout_slots does not apply to this working_memory model; it takes memory_size, scale, mask_memory, "
        "force_memory"
    )


def test_cyrillic_input_round_trips(client):
    body = client.post("/api/memory", json={"model": WM, "text": "Собака бежит по парку"}).json()
    assert "translation" in body
    page = client.get("/memory", params={"text": "Собака бежит по парку"}).text
    assert "Собака бежит по парку" in page


def test_corpus_upload_gives_the_memory_analyses_and_bleu_lesions(client):
    job = upload(
        client,
        "corpus.tsv",
        b"ein Hund spielt im Park\ta dog plays in the park\nzwei Frauen lesen\ttwo women read\n",
        model=WM,
    ).json()
    done = wait_for(client, job["id"])
    assert done["status"] == "done", done["error"]
    result = done["result"]
    conditions = {"memory", "masked", "no_memory"}
    assert result["memory_decisions"] and set(result["bleu"]) == set(result["chrf"]) == conditions
    assert set(result["length_ratio"]) == conditions
    assert result["summary"]["n_sentences"] == 2 and len(result["memory"]) == 2
    # The as-trained scores, recomputed from the translations the job returns: chrF by sacrebleu, the length ratio
    # by counting BLEU's 13a tokens.
    references = ["a dog plays in the park", "two women read"]
    translations = result["translations"]
    assert result["chrf"]["memory"] == pytest.approx(sacrebleu.corpus_chrf(translations, [references]).score)
    tokens = Tokenizer13a()
    ratio = sum(len(tokens(t).split()) for t in translations) / sum(len(tokens(r).split()) for r in references)
    assert result["length_ratio"]["memory"] == pytest.approx(ratio)
    page = client.get(f"/results/{job['id']}").text
    assert 'id="memory-sentences"' in page and 'id="figure-unique-tokens"' in page and 'id="bleu-masked"' in page
    assert f'id="chrf-masked">{result["chrf"]["masked"]:.2f}<' in page
    assert f'id="length-ratio">{ratio:.3f}<' in page


def test_attribution_onto_slots_is_refused_for_working_memory(client):
    response = client.post("/api/attribution", json={"model": WM, "text": TEXT, "position": 0})
    assert response.status_code == 400
    assert response.json()["detail"] == (
        f"{WM} is not a token-and-slot attribution model: its views are on the working memory (/memory), explore "
        "(/explore) and FF memories (/ff) pages; "
        "token-and-slot attribution models: tiny_membottleneck, tiny_memtransformer, tiny_transformer"
    )


def test_explore_shows_a_working_memory_models_attention_under_its_own_lesions(client):
    """Explore takes every model with attention: the working-memory decoder's maps, with the lesion kinds its family
    declares (its own mask and forced memory beside the memory size); its own page stays the Working memory page."""
    page = client.get("/explore", params={"model": WM, "text": TEXT}).text
    kinds = re.findall(r'<fieldset class="lesion" data-kind="([a-z_]+)">', page)
    assert kinds == ["memory_size", "mask_memory", "force_memory", "scale"]
    masked = client.post(
        "/explore/run",
        data={"model": WM, "text": TEXT, "stack": "decoder.self_attn", "lesion": "mask_memory"},
        headers=HTMX,
    )
    assert masked.status_code == 200 and 'class="lesion-note">memory masked' in masked.text
    home = client.get("/").text
    row = re.search(rf'<td class="name">{WM}<br><small class="pages">(.*?)</small>', home, re.S).group(1)
    assert row.index(f'href="/memory?model={WM}"') < row.index(f'href="/explore?model={WM}"')  # its own page first


def test_address_with_a_seed_reproduces_the_view(client):
    fragment = run(client, seed=4).text
    link = re.search(r'<a id="permalink" href="([^"]+)"', fragment).group(1).replace("&amp;", "&")
    page = client.get(link).text
    assert 'name="seed" min="0" max="2147483647" value="4"' in page and TEXT in page
    assert client.get("/memory", params={"seed": -2}).status_code == 422


def test_russian_txt_upload_keeps_its_text(client):
    job = upload(client, "ru.txt", "Собака бежит по парку\nЯ не знаю\n".encode(), model=WM).json()
    done = wait_for(client, job["id"])
    assert done["status"] == "done" and done["result"]["bleu"] is None
    page = client.get(f"/results/{job['id']}").text
    assert "Собака бежит по парку" in page and "No references" in page


# ---------------------------------------------------------------- every control acts, or the page says why not


def outcome_of(fragment: str) -> str:
    return html.unescape(re.search(r'id="lesion-outcome" role="status">(.*?)</p>', fragment, re.DOTALL).group(1))


def lesioned_translation(fragment: str) -> str:
    parts = re.findall(
        r'<span class="diff-(?:same|added)">(.*?)</span>',
        re.search(r'id="translation-lesioned">(.*?)</span></p>', fragment, re.DOTALL).group(1),
    )
    return " ".join(html.unescape(p) for p in parts)


@pytest.mark.parametrize(
    "form",
    [
        lesion_fields(memory_size={"size": 0}),
        lesion_fields(memory_size={"size": 1}),
        lesion_fields(memory_size={"size": 6}),
        {"lesion": "mask_memory"},
        forcing("Park"),
    ],
)
def test_the_outcome_says_differences_only_when_the_translation_differs(client, form):
    for seed in range(3):
        fragment = run(client, seed=seed, **form).text
        plain = html.unescape(re.search(r'id="translation-plain">(.*?)</span>', fragment).group(1))
        outcome = outcome_of(fragment)
        if plain.split() != lesioned_translation(fragment).split():
            assert outcome.startswith("The translation changed") and "differences marked" in outcome
        else:
            assert "differences marked" not in outcome and outcome.startswith(("Nothing changed", "The memory changed"))


def test_forced_words_are_the_whole_lesioned_memory_and_marked_in_the_decisions(client, tiny_tokenizer):
    fragment = run(client, **forcing("Park")).text
    written = tiny_tokenizer.display_tokens(tiny_tokenizer.encode("Park"))
    assert memory_in(fragment, "stream-lesioned") == written
    assert re.search(r'id="memory-count-lesioned">(\d+)<', fragment).group(1) == str(len(written))
    assert fragment.count("memory (forced)") == len(written)


@pytest.fixture(scope="module")
def shy_client(tmp_path_factory, tiny_tokenizer, settings):
    """A server with one working-memory model whose type head never asks for memory."""
    root = tmp_path_factory.mktemp("shy")
    shy = make_tiny_working_memory(tiny_tokenizer, memory_bias=-20.0)
    save_checkpoint(
        root / "shy_working_memory", shy.model, shy.tokenizer, meta={"training_data": "tiny test corpus"}, metrics={}
    )
    with TestClient(create_app(settings.model_copy(update={"checkpoint_dir": root}))) as client:
        yield client


def test_an_input_without_memory_says_that_the_controls_have_nothing_to_act_on(shy_client):
    form = {"model": "shy_working_memory", "text": TEXT}
    fragment = shy_client.post("/memory/run", data=form, headers=HTMX).text
    assert memory_in(fragment, "stream-plain") == []
    assert (
        "This input wrote no memory tokens with seed 0: "
        "memory size, mask, seed and the attention view have nothing to act on" in fragment
    )
    assert (
        'id="figure-memory-attention"' not in fragment and "this run wrote no memory tokens" in fragment
    )  # no empty heatmap
    masked = shy_client.post(
        "/memory/run", data={**form, **lesion_fields(mask_memory={}, memory_size={"size": 6})}, headers=HTMX
    ).text
    assert (
        outcome_of(masked)
        == "Nothing changed: this input wrote no memory tokens, so memory size and mask have nothing to act on."
    )
    forced = shy_client.post(
        "/memory/run", data={**form, **forcing("Hund")}, headers=HTMX
    ).text  # forcing writes memory all the same
    assert memory_in(forced, "stream-lesioned") and 'id="figure-memory-attention"' in forced


def test_a_masked_memory_says_its_attention_is_zero_by_construction(client):
    fragment = run(client, lesion="mask_memory").text
    assert "0% by construction" in fragment and 'id="figure-memory-attention"' in fragment


# ---------------------------------------------------------------- models that do not fit the page


@pytest.mark.parametrize(
    ("model", "status", "reason", "elsewhere"),
    [
        (
            "tiny_transformer",
            400,
            "tiny_transformer is not a working-memory model: its views are on the explore (/explore) and FF memories "
            "(/ff) pages",
            ("explore", "/explore?model=tiny_transformer"),
        ),
        (
            "tiny_memtransformer",
            400,
            "tiny_memtransformer is not a working-memory model: its views are on the explore (/explore) and FF "
            "memories (/ff) pages",
            ("explore", "/explore?model=tiny_memtransformer"),
        ),
        (
            "tiny_language_model",
            400,
            "tiny_language_model is not a working-memory model: its views are on the FF memories (/ff) and explore "
            "(/explore) pages",
            ("FF memories", "/ff?model=tiny_language_model"),
        ),
        ("nope", 404, "unknown model 'nope'; working-memory models: tiny_working_memory", None),
        ("broken_model", 409, "checkpoint 'broken_model' is unavailable: ", None),
    ],
)
def test_an_unsuitable_model_gets_a_readable_page_that_links_to_the_suitable_ones(
    client, model, status, reason, elsewhere
):
    response = client.get("/memory", params={"model": model, "text": TEXT})
    assert response.status_code == status and response.headers["content-type"].startswith("text/html")
    page = html.unescape(response.text)
    assert reason in page and '<select name="model"' not in page  # the page of another model is not shown
    assert re.findall(r'<ul id="suitable-models">\s*<li><a href="([^"]+)">', response.text) == [
        "/memory?model=tiny_working_memory&amp;text=ein+Hund+spielt+im+Park"  # the input is kept
    ]
    if elsewhere:  # the model's own page, by its title and address
        title, href = elsewhere
        assert (
            f'<p id="shown-elsewhere">{model} is shown on <a href="{href}&amp;text=ein+Hund+spielt+im+Park">'
            f"the {title} page</a>.</p>" in response.text
        )


def test_an_unknown_name_is_not_echoed_without_bound(client):
    too_long = client.get(
        "/memory", params={"model": "x" * 20_000}
    )  # refused where it enters: names are at most 100 characters
    assert too_long.status_code == 422 and len(too_long.content) < 5_000
    unknown = client.get("/memory", params={"model": "x" * 100})
    assert unknown.status_code == 404 and len(unknown.content) < 5_000 and "x" * 61 not in unknown.text


def test_running_an_unsuitable_model_is_a_clear_error(client):
    for model, status in (
        ("tiny_language_model", 400),
        ("nope", 404),
        ("broken_model", 409),
        ("x" * 100, 404),
        ("x" * 20_000, 422),
    ):
        response = client.post("/memory/run", data={"model": model, "text": TEXT}, headers=HTMX)
        assert (
            response.status_code == status
            and response.headers["HX-Retarget"] == "#errors"
            and len(response.content) < 2_000
        )


# ---------------------------------------------------------------- example sentences


def test_the_page_offers_the_measured_examples_as_links_that_run_them(client, monkeypatch):
    measured = {
        "models": {
            WM: {
                "corpus": "tiny corpus, val",
                "examples": [
                    {
                        "source": TEXT,
                        "reference": "a dog plays in the park",
                        "memory_tokens": 2,
                        "memory": ["a", "b"],
                        "translation": "x",
                        "masked": "y",
                        "no_memory": "x",
                    }
                ],
            }
        }
    }
    monkeypatch.setattr(measured_examples, "_read", lambda path: measured if path == MEMORY_EXAMPLES_FILE else {})
    page = client.get("/memory").text
    link = re.search(r'<a class="memory-example" href="([^"]+)"[^>]*>(.*?)</a>\s*<small>(.*?)</small>', page, re.DOTALL)
    assert link.group(2) == TEXT and link.group(3) == "2 memory tokens; the mask changes the translation"
    assert TEXT in client.get(html.unescape(link.group(1))).text


def test_the_shipped_examples_are_measured_for_every_shipped_working_memory_model():
    shipped = json.loads(MEMORY_EXAMPLES_FILE.read_text(encoding="utf-8"))
    assert set(shipped["models"]) == {p.name for p in working_memory_checkpoints(REPO_ROOT / "checkpoints")}
    for measured in shipped["models"].values():
        assert len(measured["examples"]) >= 3 and all(e["memory_tokens"] > 0 for e in measured["examples"])
