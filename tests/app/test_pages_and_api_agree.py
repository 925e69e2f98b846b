"""Every page's HTML fragment and its JSON route answer the same request with the same numbers: both call the
page's one service (app/services/), so the figures a person sees are the values a script reads."""

from __future__ import annotations

import base64
import html
import json
import re

import numpy as np

from inference.core.places import REPO_ROOT
from tests.app.conftest import HTMX, compared_page
from training.tasks.rmt_tasks import task_split, text

MT, WM, LM = "tiny_memtransformer", "tiny_working_memory", "tiny_language_model"
GERMAN = "ein Hund spielt im Park"


def figures(page: str) -> dict[str, dict]:
    found = re.findall(r'<script type="application/json" id="figure-data-([\w-]+)">(.*?)</script>', page, re.S)
    return {name: json.loads(data) for name, data in found}


def values(array) -> np.ndarray:
    """A figure's or the API's array: a plain list, or Plotly's binary encoding."""
    if isinstance(array, dict):
        shape = array["shape"]
        shape = [int(n) for n in shape.split(",")] if isinstance(shape, str) else shape
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"])).reshape(shape)
    return np.asarray(array)


def text_of(page: str, element_id: str) -> str:
    """The words of one element (a span, its nested spans included), tags dropped."""
    start = page.index(f'id="{element_id}"')
    depth, position = 1, page.index(">", start) + 1
    for tag in re.finditer(r"<(/?)span\b[^>]*>", page[position:]):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            inner = page[position : position + tag.start()]
            return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", inner)).split())
    raise AssertionError(f"{element_id} is not closed")


def changed_text(page: str, element_id: str) -> str:
    """The words of an output shown as a difference from the plain one, its removed words dropped."""
    kept = re.sub(r'<span class="diff-removed">[^<]*</span>', "", page)
    return text_of(kept, element_id)


def post_html(client, path: str, form: dict) -> str:
    response = client.post(path, data=form, headers=HTMX)
    assert response.status_code == 200, response.text
    return response.text


def post_json(client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_explore(client):
    form = {"model": MT, "text": GERMAN, "lesion": "memory_size", "memory_size.size": "1",
            "stack": "decoder.cross_attn", "layer": "1", "head": "1"}  # fmt: skip
    page = post_html(client, "/explore/run", form)
    body = post_json(
        client,
        "/api/explore",
        {"model": MT, "text": GERMAN, "interventions": [{"kind": "memory_size", "size": 1}],
         "stack": "decoder.cross_attn", "layer": 1, "head": 1},
    )  # fmt: skip
    assert text_of(page, "translation-plain") == body["plain_output"]
    assert changed_text(page, "translation-lesioned") == body["output"]
    assert html.escape(body["note"], quote=False) in page
    heatmap = values(figures(page)["heatmap"]["data"][0]["z"])
    weights = values(body["attention"]["weights"])  # [heads, q, k] uint8 percent
    assert weights.shape[0] == 2 and np.array_equal(heatmap, weights[1])
    grid = figures(page)["grid"]["data"]
    assert [np.array_equal(values(grid[h]["z"]), weights[h]) for h in range(2)] == [True, True]


def test_compare(client):
    page = compared_page(client, {"models": [MT, "tiny_transformer"], "text": GERMAN})
    body = post_json(client, "/api/compare", {"models": [MT, "tiny_transformer"], "text": GERMAN})
    rows = re.findall(r'<tr><td>([\w]+)</td><td class="compare-translation">(.*?)</td></tr>', page)
    assert [(model, html.unescape(text)) for model, text in rows] == [
        (row["model"], row["translation"]) for row in body["models"]
    ]
    bars = figures(page)["compare"]["data"]
    for column, row in enumerate(body["models"]):
        shown = [bar for bar in bars if bar.get("xaxis", "x") == ("x" if column == 0 else f"x{column + 1}")]
        write = next(bar for bar in shown if bar["name"] == "write")
        by_layer: dict[str, list[float]] = {}
        for block in row["blocks"]:
            by_layer.setdefault(f"{block['stack']} L{block['layer']}", []).append(block["write"])
        assert list(write["x"]) == list(by_layer)
        assert np.allclose(values(write["y"]), [np.mean(heads) for heads in by_layer.values()], atol=1e-6)


def test_working_memory(client):
    page = post_html(client, "/memory/run", {"model": WM, "text": GERMAN, "seed": "1", "layer": "1",
                                             "lesion": "force_memory", "force_memory.tokens": "Hund"})  # fmt: skip
    forced_ids = client.app.state.gateway.model(WM).tokenizer.encode("Hund")
    body = post_json(
        client,
        "/api/memory",
        {"model": WM, "text": GERMAN, "seed": 1, "layer": 1,
         "interventions": [{"kind": "force_memory", "tokens": forced_ids}]},
    )  # fmt: skip
    assert text_of(page, "translation-plain") == body["plain_translation"]
    assert changed_text(page, "translation-lesioned") == body["translation"]
    assert html.escape(body["outcome"], quote=False) in page
    stream = re.search(r'id="stream-lesioned">(.*?)</span>\n', page, re.S).group(1)
    shown_memory = re.findall(r'<span class="wm-token" title="memory">(.*?)</span>', stream)
    assert [html.unescape(token) for token in shown_memory] == body["memory"] and len(body["memory"]) >= len(forced_ids)
    attention = values(figures(page)["memory-attention"]["data"][0]["z"]).astype(float)  # head mean, whole percent
    weights = values(body["attention"]["weights"]).astype(float)  # [heads, target queries, memory keys], percent
    assert attention.shape == weights.shape[1:] and np.abs(attention - weights.mean(axis=0)).max() <= 1.0


def test_ff_memories(client):
    page = post_html(client, "/ff/run", {"model": LM, "text": "a man", "edits": "layers.0.ff:0,1,2,3 x0"})
    body = post_json(
        client,
        "/api/ff/lens",
        {"model": LM, "text": "a man", "top_keys": 3, "top_tokens": 3,
         "interventions": [{"kind": "scale", "hook": "layers.0.ff.keys", "axis": "ff_key", "index": [0, 1, 2, 3],
                            "factor": 0}]},
    )  # fmt: skip
    assert text_of(page, "output-plain") == body["plain_output"]
    assert changed_text(page, "output-edited") == body["output"]
    rows = re.findall(r"<tr class=\"(changed)?\">(.*?)</tr>", page.split('id="prediction-changes"')[1], re.S)
    assert len(rows) == len(body["prediction_changes"])
    for (_, row), change in zip(rows, body["prediction_changes"]):
        shown = re.findall(r"<small>([0-9.]+)</small>", row)
        assert shown[0] == f"{change['before_probability']:.2f}" and shown[1] == f"{change['after_probability']:.2f}"
    lens = page.split('id="lens-table"')[1]
    first_cell = body["layers"][0]["positions"][0]
    residual = re.findall(r"<small>([0-9.]+)</small>", lens.split("<tr>")[2].split("</td>")[2])
    assert residual == [f"{p:.2f}" for _, p in first_cell["residual"]]


def test_ff_key_cards(client):
    page = client.get("/ff/keys", params={"model": LM, "layer": 1, "key": "5, 2"}, headers=HTMX)
    assert page.status_code == 200
    body = post_json(client, "/api/ff/keys", {"model": LM, "layer": 1, "keys": [5, 2], "triggers": 50})
    cards = re.findall(r'<article class="key-card" data-key="([\w.]+):(\d+)">(.*?)</article>', page.text, re.S)
    assert [(layer, int(key)) for layer, key, _ in cards] == [(card["layer"], card["key"]) for card in body["keys"]]
    for (_, _, card_html), card in zip(cards, body["keys"]):
        assert f"‖v‖ {card['value_norm']:.2f}" in card_html
        shown = re.findall(r'title="p ([0-9.]+)', card_html)  # a special token's chip names it after its p
        assert shown == [f"{p:.3f}" for _, p in card["value_tokens"]]


def test_attribution(client):
    form = {"model": MT, "text": GERMAN, "position": "1", "lesion": "knockout_slots", "knockout_slots.slots": "0"}
    page = post_html(client, "/explore/attribution", form)
    body = post_json(
        client,
        "/api/attribution",
        {"model": MT, "text": GERMAN, "position": 1, "interventions": [{"kind": "knockout_slots", "slots": [0]}]},
    )
    bars = figures(page)["attribution"]["data"]  # integrated gradients: source, memory; saliency: source, memory
    fields = ["integrated_gradients_source", "integrated_gradients_memory", "saliency_source", "saliency_memory"]
    for bar, field in zip(bars, fields):
        assert np.allclose(values(bar["y"]), body[field], atol=1e-6), field


def test_state(shipped_client):
    problem = "1110+1000"
    form = {
        "model": "neural_gpu_addition",
        "text": problem,
        "lesion": "edit_state",
        "edit_state.mode": "zero",
        "edit_state.from_step": "2",
        "edit_state.start": "0",
    }
    page = post_html(shipped_client, "/state/run", form)
    body = post_json(
        shipped_client,
        "/api/state",
        {"model": "neural_gpu_addition", "text": problem,
         "interventions": [{"kind": "edit_state", "mode": "zero", "from_step": 2, "start": 0}]},
    )  # fmt: skip
    frames = json.loads(re.search(r'<script type="application/json" id="state-frames">(.*?)</script>', page).group(1))
    assert frames["state"] == body["state"]
    assert text_of(page, "output-plain") == body["plain_output"]
    update = values(figures(page)["update"]["data"][0]["z"])  # [steps, positions]: the gate, as the figure has it
    assert np.allclose(update, np.asarray(body["update"]), atol=1e-4)  # the API rounds to 4 places


def test_focus(shipped_client):
    model, sentence = "extended_neural_gpu_de_en", "Ein Hund läuft."
    page = post_html(shipped_client, "/focus/run", {"model": model, "text": sentence, "steps": "8"})
    body = post_json(shipped_client, "/api/focus", {"model": model, "text": sentence, "steps": 8})
    shown = values(figures(page)["attribution-0"]["data"][0]["z"])
    assert np.allclose(shown, np.asarray(body["attribution_share"]), atol=1e-6)


def test_segments(segments_client):
    stream = text(task_split("reverse", "test", 1)[0].stream)
    form = {"model": "rmt", "text": stream, "segment": "1", "lesion": "reset_memory", "reset_memory.segment": "1"}
    page = post_html(segments_client, "/segments/run", form)
    body = post_json(
        segments_client,
        "/api/segments",
        {"model": "rmt", "text": stream, "segment": 1, "interventions": [{"kind": "reset_memory", "segment": 1}]},
    )
    scored = [hit for hit in body["plain_hits"] if hit is not None]
    assert text_of(page, "accuracy-plain") == f"{100 * sum(scored) / len(scored):.1f}%"
    lesioned = [hit for hit in body["lesioned_hits"] if hit is not None]
    assert text_of(page, "accuracy-lesioned") == f"{100 * sum(lesioned) / len(lesioned):.1f}%"
    attention = values(figures(page)["segment"]["data"][0]["z"])
    assert np.array_equal(attention, values(body["attention"]["weights"])[0])
    assert body["starts"] == [int(s) for s in re.findall(r"(\d+)–", page.split('id="segment-count"')[1])[:3]]


def test_segments_of_memory_added_to_a_pretrained_model(shipped_client):
    copy = REPO_ROOT / "checkpoints" / "gpt2_copy_memory10"
    example = json.loads((copy / "config.json").read_text())["meta"]["example"]
    form = {"model": "gpt2_copy_memory10", "text": example, "segment": "2", "lesion": "knockout_slots",
            "knockout_slots.slots": ["0", "1", "2", "3"]}  # fmt: skip
    page = post_html(shipped_client, "/segments/run", form)
    body = post_json(
        shipped_client,
        "/api/segments",
        {"model": "gpt2_copy_memory10", "text": example, "segment": 2,
         "interventions": [{"kind": "knockout_slots", "slots": [0, 1, 2, 3]}]},
    )  # fmt: skip
    for run in ("plain", "lesioned"):
        scored = [hit for hit in body[f"{run}_hits"] if hit is not None]
        assert text_of(page, f"accuracy-{run}") == f"{100 * sum(scored) / len(scored):.1f}%"
    assert body["lesioned_hits"] != body["plain_hits"]
    attention = values(figures(page)["segment"]["data"][0]["z"])
    assert np.array_equal(attention, values(body["attention"]["weights"])[0])
