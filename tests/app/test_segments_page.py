"""The Segments page over real (briefly trained) task checkpoints: every view
it promises is there, each lesion changes the run it should, and bad input
gets a clear 4xx."""

from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pytest

from tests.app.conftest import lesion_fields
from training.tasks.rmt_tasks import TOKENS, task_split, text

SAMPLE = task_split("reverse", "test", 1)[0]
STREAM = text(SAMPLE.stream)  # 49 tokens: 3 segments of 17, 17, 15
OTHER = text(task_split("reverse", "test", 2)[1].stream)


@pytest.fixture
def client(segments_client):
    return segments_client


def run(client, model="rmt", **fields):
    return client.post("/segments/run", data={"model": model, "text": STREAM, **fields})


def figures(html: str) -> dict[str, dict]:
    found = re.findall(r'<script type="application/json" id="figure-data-(\w+)">(.*?)</script>', html, re.S)
    return {name: json.loads(data) for name, data in found}


def strip_rows(html: str) -> dict[str, list[float]]:
    """The hits strip's rows by name ("plain 45.8%": ...), its binary z decoded."""
    trace = figures(html)["strip"]["data"][0]
    z = trace["z"]
    values = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(
        [int(n) for n in str(z["shape"]).split(",")]
    )
    return {name: list(row) for name, row in zip(trace["y"], values)}


def test_the_page_offers_the_models_sample_and_its_memory_controls(client):
    page = client.get("/segments?model=rmt")
    assert page.status_code == 200
    assert "RMT, 4 memory tokens; segments of 17 tokens" in page.text and "trained on the reverse task" in page.text
    assert re.search(r"<textarea name=\"text\"[^>]*>[0-7]{24}&lt;bos&gt;[0-7]{24}</textarea>", page.text)
    kinds = re.findall(r'<fieldset class="lesion" data-kind="([a-z_]+)">', page.text)
    assert kinds == ["memory_size", "knockout_slots", "reset_memory", "transplant_memory", "noise_memory", "scale"]
    assert page.text.count('name="knockout_slots.slots"') == 8  # up to twice the trained 4, those above 4 hidden
    assert 'name="transplant_memory.donor"' in page.text
    xl = client.get("/segments?model=xl")
    assert re.findall(r'<fieldset class="lesion" data-kind="([a-z_]+)">', xl.text) == ["scale"]
    assert "cached states of earlier segments" in xl.text


def test_a_run_draws_the_strip_the_segment_and_the_memory_path(client):
    response = run(client, segment=1, layer=1, head=1)
    assert response.status_code == 200
    drawn = figures(response.text)
    assert set(drawn) == {"strip", "segment", "path", "operations", "probe"}
    probe = drawn["probe"]
    assert probe["data"][0]["y"] == ["slot 0", "slot 1", "slot 2", "slot 3", "all slots", "chance"]
    assert len(probe["data"][0]["x"]) == 24 and "after segment 1" in probe["layout"]["title"]["text"]
    operations = drawn["operations"]["data"][0]
    assert len(operations["y"]) == 2 and len(operations["x"]) == 2  # layers x heads
    assert '<span id="segment-count">3</span> (0–16, 17–33, 34–48)' in response.text
    segment = drawn["segment"]
    assert segment["layout"]["title"]["text"] == "attn layer 1 head 1, segment 1"
    names = {a["text"] for a in segment["layout"]["annotations"]}
    assert names == {f"{q} → {k}" for q in ("read", "sequence", "write") for k in ("read", "sequence", "write")}
    assert len(segment["layout"]["shapes"]) == 9  # 3 query blocks x 3 key blocks
    path = drawn["path"]["data"][0]
    assert len(path["y"]) == 3 * 4 and path["x"][-3:] == ["read memory", "write memory", "cache"]  # 3 writes of 4 slots
    assert len(drawn["strip"]["data"][0]["y"]) == 1  # no lesion: the plain row only


def test_the_transformer_xl_map_shows_its_cache_and_has_no_memory_path(client):
    drawn = figures(run(client, model="xl", segment=2).text)
    assert set(drawn) == {"strip", "segment"}
    labels = {a["text"] for a in drawn["segment"]["layout"]["annotations"]}
    assert labels == {"sequence → cache", "sequence → sequence"}
    keys = drawn["segment"]["data"][0]["x"]
    assert len(keys) == 4 + 15  # the 4 cached positions, then the last segment's 15 tokens
    assert [key.split(" ", 1)[1] for key in keys[:4]] == [
        TOKENS[i] for i in SAMPLE.stream[30:34]
    ]  # the cache: tokens 30-33


@pytest.mark.parametrize(
    "lesion",
    [
        lesion_fields(reset_memory={"segment": 1}),
        lesion_fields(knockout_slots={"slots": [0, 2]}),
        lesion_fields(noise_memory={"segment": 1, "scale": 3}),
        lesion_fields(transplant_memory={"segment": 2, "donor": OTHER}),
        lesion_fields(knockout_slots={"slots": [0, 1, 2, 3]}),
    ],  # every slot: the read memory, which attends memory alone, then attends nothing
)
def test_every_lesion_changes_the_run_after_its_segment_and_is_marked(client, lesion):
    ((plain_name, plain),) = strip_rows(run(client).text).items()
    response = run(client, **lesion)
    assert response.status_code == 200, response.text
    rows = strip_rows(response.text)
    names = list(rows)
    assert names[0] == plain_name and names[1].startswith("lesioned") and names[2] == "changed"
    assert np.array_equal(rows[plain_name], plain, equal_nan=True)
    scored = ~np.isnan(plain)
    changed = np.asarray(rows["changed"])[scored] == 0  # red where the outcome changed
    assert np.array_equal(changed, (np.asarray(rows[names[1]]) != np.asarray(plain))[scored])
    said = f"{changed.sum()} of {scored.sum()} positions changed outcome, marked" if changed.any() else "no position"
    assert f"{said}; the attention views" in response.text or f"{said} changed outcome; the attention" in response.text


def test_bad_segment_input_gets_a_clear_4xx(client):
    cases = [
        ({"segment": 3}, "segment 3 is out of range: this input has 3"),
        (lesion_fields(reset_memory={"segment": 7}), "reset at segment 7: this input has 3 segments"),
        (
            lesion_fields(transplant_memory={"segment": 1}),
            "Transplant another input&#39;s memory: donor: Field required",
        ),
        (
            lesion_fields(transplant_memory={"segment": 2, "donor": "0123"}),
            "the donor input has 4 tokens; it reaches segment 2 only with at least 34",
        ),
        (lesion_fields(knockout_slots={"slots": [9]}), "slots 9 is out of range for this model (0 to 7)"),
        (lesion_fields(memory_size={"size": 2}, knockout_slots={"slots": [3]}), "memory slots [3] are out of range"),
        ({"head": 2}, "head 2 is out of range (0 to 1)"),
        (lesion_fields(noise_memory={"segment": 1, "scale": 0}), "Add noise to the memory at a segment: scale: Input"),
        ({"layer": 5}, "layer 5 is out of range"),
    ]
    for fields, message in cases:
        response = run(client, **fields)
        assert 400 <= response.status_code < 500 and message in response.text, (fields, response.text[-400:])
    xl = run(client, model="xl", **lesion_fields(reset_memory={"segment": 1}))  # no memory to reset
    assert xl.status_code == 400 and "reset_memory does not apply to this model; it takes scale" in xl.text
    assert 400 <= client.post("/segments/run", data={"model": "rmt", "text": ""}).status_code < 500


def test_explore_bounds_a_segment_lesion_by_the_segments_its_input_has(client):
    """Explore offers a segment model's segment lesions too, and refuses one beyond the input as Segments does."""
    form = {"model": "rmt", "text": STREAM, "stack": "attn", **lesion_fields(reset_memory={"segment": 3})}
    beyond = client.post("/explore/run", data=form, headers={"HX-Request": "true"})
    assert beyond.status_code == 400 and "reset at segment 3: this input has 3 segments" in beyond.text
    within = client.post("/explore/run", data={**form, "reset_memory.segment": "2"}, headers={"HX-Request": "true"})
    assert within.status_code == 200 and "memory reset at segment 2" in within.text


def test_a_language_model_page_states_what_its_memory_is_worth_as_measured(shipped_client):
    """The shipped RMT language model's record (metrics.json, "carried_state"): negative log-likelihood 179,110.817
    nats as trained and 182,215.444 with the memory reset at every segment, over 41,918 scored tokens; the page and
    /api/models give the perplexities, their difference with its interval, and call the memory used because the
    interval lies above zero. A task model without a record says nothing."""
    as_trained, reset = math.exp(179110.817 / 41918), math.exp(182215.444 / 41918)  # 71.728, 77.243
    page = shipped_client.get("/segments?model=rmt10_enwiki_10000steps")
    assert page.status_code == 200
    assert '<p class="variant">RMT, 10 memory tokens; segments of 50 tokens</p>' in page.text
    line = re.search(r'<p class="carried-state" id="carried-state">(.*?)</p>', page.text, re.S)
    assert line is not None
    assert line.group(1) == (
        f"Measured offline on the first 120 enwiki validation articles (41,918 tokens): perplexity {as_trained:.2f} "
        f"as trained, {reset:.2f} with what it carries removed (memory reset to its initial value at every segment), "
        f"a difference of {reset - as_trained:+.2f} [+4.84, +6.15] (95% interval, 2,000 paired resamplings of the "
        "articles, seed 0): <strong>the model uses what it carries</strong>."
    )
    assert 'id="carried-state"' not in shipped_client.get("/segments?model=rmt_copy").text
    models = {m["name"]: m for m in shipped_client.get("/api/models").json()["models"]}
    measured = models["rmt10_enwiki_10000steps"]["carried_state"]
    assert measured["difference"] == pytest.approx(reset - as_trained, abs=1e-3)
    assert measured["low"] > 0 and measured["verdict"] == "the model uses what it carries"
    assert models["rmt_copy"]["carried_state"] is None
