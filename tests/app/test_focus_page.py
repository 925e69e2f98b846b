"""The Focus page and /api/focus over the shipped paper-001 translators: the
Extended Neural GPU's attribution beside the GRU's attribution and attention
for one sentence, each map a [outputs x sources] table of shares, and bad
input refused with a clear 4xx."""

from __future__ import annotations

import json
import re

import pytest

SENTENCE = "Ein Hund rennt über die Wiese."
EXTENDED, GRU = "extended_neural_gpu_de_en", "gru_attention_de_en"


@pytest.fixture
def client(shipped_client):
    return shipped_client


def figures(html: str) -> dict[str, dict]:
    found = re.findall(r'<script type="application/json" id="figure-data-([\w-]+)">(.*?)</script>', html, re.S)
    return {name: json.loads(data) for name, data in found}


def test_the_page_puts_a_model_that_attends_beside_one_that_does_not(client):
    page = client.get(f"/focus?model={EXTENDED}")
    assert page.status_code == 200
    selected = re.findall(r'<option value="(\w+)" selected', page.text)
    assert selected[:2] == [EXTENDED, GRU]
    offered = re.findall(r'<option value="(\w+)"', page.text.split('name="model"')[1].split("</select>")[0])
    assert EXTENDED in offered and GRU in offered and "transformer" not in offered
    task = client.get("/focus?model=neural_gpu_addition")  # a task model: its own example, no translator beside
    assert re.search(r'<textarea name="text"[^>]*>[01]+\+[01]+</textarea>', task.text)
    assert re.findall(r'<option value="(\w*)" selected', task.text)[:2] == ["neural_gpu_addition", ""]


def test_a_run_shows_both_models_maps_and_their_summary(client):
    response = client.post("/focus/run", data={"model": EXTENDED, "other": GRU, "text": SENTENCE, "steps": 16})
    assert response.status_code == 200, response.text
    shown = figures(response.text)
    assert set(shown) == {"attribution-0", "attribution-1", "attention-1"}  # the Extended NGPU has no attention
    for figure in shown.values():
        rows = figure["data"][0]["z"]
        assert figure["data"][0]["x"][0].endswith("Ein") and len(rows[0]) == 7  # 6 words and EOS
        assert all(sum(row) == pytest.approx(1.0, abs=1e-3) for row in rows)
    rows = re.findall(r'<tr class="focus-row" data-model="(\w+)">(.*?)</tr>', response.text, re.S)
    assert [name for name, _ in rows] == [EXTENDED, GRU]
    assert "no attention" in rows[0][1] and "% of outputs" in rows[1][1]


def test_the_api_gives_the_matrices_and_the_agreement(client):
    answer = client.post("/api/focus", json={"model": GRU, "text": SENTENCE, "steps": 32})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    outputs, sources = len(found["output_tokens"]), len(found["source_tokens"])
    assert found["source_tokens"][-1] == "<eos>" and sources == 7
    assert [len(found["integrated_gradients"]), len(found["integrated_gradients"][0])] == [outputs, sources]
    assert [len(found["attention"]), len(found["attention"][0])] == [outputs, sources]
    assert found["attention_stack"] == "cross_attn layer 0" and 0 <= found["agreement"] <= 1
    assert found["convergence_delta"] < 0.05
    extended = client.post("/api/focus", json={"model": EXTENDED, "text": SENTENCE}).json()
    assert extended["attention"] is None and extended["agreement"] is None


def test_bad_input_gets_a_clear_4xx(client):
    cases = [
        ({"model": "transformer"}, 400, "transformer is not a source-attribution model"),
        ({"steps": 12}, 422, "integration steps are one of 8, 16, 32, 64"),
        ({"text": " ".join(["Hund"] * 30)}, 400, "attribution takes at most 24 source tokens; this text has 30"),
        ({"text": ""}, 400, "the text is empty"),
        ({"other": "language_model"}, 400, "language_model is not a source-attribution model"),
        ({"other": "nope"}, 404, "unknown model"),
        ({"other": "neural_gpu_addition"}, 400, "the model's vocabulary"),
    ]
    for fields, status, message in cases:
        response = client.post("/focus/run", data={"model": EXTENDED, "text": SENTENCE, **fields})
        shown = response.text.replace("&#39;", "'")
        assert response.status_code == status and message in shown, (fields, response.text[-300:])
    api = client.post("/api/focus", json={"model": EXTENDED, "text": SENTENCE, "steps": 5})
    assert api.status_code == 422 and "integration steps" in api.json()["detail"]
