"""The Working memory page, /api/memory and corpus jobs of a working-memory
model, on a tiny model whose type head leans towards writing memory."""

from __future__ import annotations

import re

import pytest

from tests.app.conftest import HTMX
from tests.app.test_jobs import upload, wait_for

WM = "tiny_working_memory"
TEXT = "ein Hund spielt im Park"


def run(client, **form):
    return client.post("/memory/run", data={"model": WM, "text": TEXT, **form}, headers=HTMX)


def memory_in(fragment: str, element: str) -> list[str]:
    stream = re.search(rf'id="{element}">(.*?)</span>\n', fragment, re.S).group(1)
    return re.findall(r'<span class="wm-token" title="memory">(.*?)</span>', stream)


def test_page_offers_the_working_memory_models_and_their_language(client):
    page = client.get("/memory").text
    assert f'<option value="{WM}" selected>' in page and "tiny_transformer" not in page
    assert "Russian text" in page and 'max="6"' in page  # slider up to 2 x trained 3


def test_run_shows_memory_inline_and_one_decision_per_element(client):
    fragment = run(client).text
    memory = memory_in(fragment, "stream-plain")
    assert 0 < len(memory) <= 3
    elements = re.search(r'id="stream-plain">(.*?)</span>\n', fragment, re.S).group(1).count("<span class=")
    steps = re.search(r'<table class="sentences" id="steps">(.*?)</table>', fragment, re.S).group(1).count("<tr")
    assert steps - 1 == elements  # header row; the final EOS (or the step budget) ends the stream
    assert 'id="figure-decisions"' in fragment and 'id="figure-memory-attention"' in fragment


def test_seed_reproduces_and_changes_memory(client):
    assert memory_in(run(client, seed=3).text, "stream-plain") == memory_in(run(client, seed=3).text, "stream-plain")
    seen = {tuple(memory_in(run(client, seed=s).text, "stream-plain")) for s in range(6)}
    assert len(seen) > 1


def test_lesions_show_as_a_second_run(client, tiny_tokenizer):
    masked = run(client, mask_memory="true").text
    assert "memory masked" in masked and 'id="stream-lesioned"' in masked
    forced = run(client, forced="Hund").text
    written = tiny_tokenizer.display_tokens(tiny_tokenizer.encode("Hund"))  # the typed word's pieces, in order
    assert memory_in(forced, "stream-lesioned")[: len(written)] == written
    none = run(client, memory_size=0).text
    assert memory_in(none, "stream-lesioned") == [] and "memory size 0" in none


@pytest.mark.parametrize(
    ("form", "status", "message"),
    [
        ({"text": "  "}, 400, "the text is empty"),
        ({"memory_size": 7}, 400, "allows 0 to 6"),
        ({"layer": 2}, 400, "layer 2 is out of range"),
        ({"seed": -1}, 422, "seed"),
        ({"forced": "Hund Park Wiese Kind Frau"}, 400, "do not fit a memory of 3"),
        ({"model": "tiny_transformer"}, 400, "has no working memory"),
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
    masked = client.post("/api/memory", json={"model": WM, "text": TEXT, "seed": 1, "interventions": {"mask_memory": True}}).json()
    assert masked["interventions"]["mask_memory"] is True
    assert client.post("/api/memory", json={"model": WM, "text": TEXT, "interventions": {"knockout_slots": [0]}}).status_code == 400


def test_cyrillic_input_round_trips(client):
    body = client.post("/api/memory", json={"model": WM, "text": "Собака бежит по парку"}).json()
    assert "translation" in body
    page = client.get("/memory", params={"text": "Собака бежит по парку"}).text
    assert "Собака бежит по парку" in page


def test_corpus_upload_gives_the_memory_analyses_and_bleu_lesions(client):
    job = upload(client, "corpus.tsv", "ein Hund spielt im Park\ta dog plays in the park\nzwei Frauen lesen\ttwo women read\n".encode(), model=WM).json()
    done = wait_for(client, job["id"])
    assert done["status"] == "done", done["error"]
    result = done["result"]
    assert result["working_memory"] and set(result["bleu"]) == {"memory", "masked", "no_memory"}
    assert result["summary"]["n_sentences"] == 2 and len(result["memory"]) == 2
    page = client.get(f"/results/{job['id']}").text
    assert 'id="memory-sentences"' in page and 'id="figure-unique-tokens"' in page and 'id="bleu-masked"' in page


def test_attribution_onto_slots_is_refused_for_working_memory(client):
    response = client.post("/api/attribution", json={"model": WM, "text": TEXT, "position": 0})
    assert response.status_code == 400 and "working-memory model" in response.json()["detail"]


def test_explore_sends_a_working_memory_model_to_its_page(client):
    response = client.get("/explore", params={"model": WM, "text": "Собака"}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/memory?model=tiny_working_memory&text=%D0%A1%D0%BE%D0%B1%D0%B0%D0%BA%D0%B0"


def test_address_with_a_seed_reproduces_the_view(client):
    fragment = run(client, seed=4).text
    link = re.search(r'<a id="permalink" href="([^"]+)"', fragment).group(1).replace("&amp;", "&")
    page = client.get(link).text
    assert 'name="seed" min="0" value="4"' in page and TEXT in page
    assert client.get("/memory", params={"seed": -2}).status_code == 422


def test_russian_txt_upload_keeps_its_text(client):
    job = upload(client, "ru.txt", "Собака бежит по парку\nЯ не знаю\n".encode(), model=WM).json()
    done = wait_for(client, job["id"])
    assert done["status"] == "done" and done["result"]["bleu"] is None
    page = client.get(f"/results/{job['id']}").text
    assert "Собака бежит по парку" in page and "No references" in page
