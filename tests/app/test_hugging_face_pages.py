"""A researcher's own Hugging Face model, served from a models folder (`memlens --models-dir DIR serve`): listed on
the home page and by /api/models with what it can do, its FF memories page and the logit lens, a key edit that
changes a prediction, and its attention through the JSON API."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.app.conftest import HTMX
from tests.hugging_face_models import N_HEADS, N_LAYERS, build_folder

MODEL = "my_gpt2"
TEXT = "the king saw a dog in the city"


@pytest.fixture(scope="module")
def client(tmp_path_factory, checkpoint_dir):
    models = tmp_path_factory.mktemp("models")
    build_folder("gpt2", models / MODEL)
    settings = Settings(checkpoint_dir=checkpoint_dir, models_dirs=[models], device="cpu", max_new_tokens=12,
                        database=tmp_path_factory.mktemp("hf_db") / "memlens.sqlite3")  # fmt: skip
    with TestClient(create_app(settings)) as client:
        yield client


def test_the_model_is_listed_with_what_it_can_do(client):
    listed = {m["name"]: m for m in client.get("/api/models").json()["models"]}
    assert sorted(listed[MODEL]["capabilities"]) == ["attention", "ff_keys", "generates_text", "next_token"]
    assert listed[MODEL]["meta"] == {"version": 2, "format": "Hugging Face"}
    home = client.get("/").text
    assert f'href="/ff?model={MODEL}"' in home


def test_the_ff_page_shows_its_keys_and_an_edit_changes_a_prediction(client):
    page = client.get("/ff", params={"model": MODEL})
    assert page.status_code == 200 and f'<option value="{MODEL}" selected' in page.text
    keys = client.get("/ff/keys", params={"model": MODEL, "layer": 1, "key": "3"}, headers=HTMX)
    assert keys.status_code == 200 and 'data-key="layers.1.ff:3"' in keys.text
    every_key = ",".join(str(k) for k in range(64))
    edits = "; ".join(f"layers.{layer}.ff:{every_key} x0" for layer in range(N_LAYERS))
    lens = client.post(
        "/api/ff/lens",
        json={"model": MODEL, "text": TEXT, "interventions": [
            {"kind": "scale", "hook": f"layers.{layer}.ff.keys", "axis": "ff_key", "index": list(range(64)),
             "factor": 0} for layer in range(N_LAYERS)]},
    ).json()  # fmt: skip
    changed = [c for c in lens["prediction_changes"] if c["before"] != c["after"]]
    assert changed, "zeroing every FF key changes no prediction"
    fragment = client.post("/ff/run", data={"model": MODEL, "text": TEXT, "edits": edits}, headers=HTMX)
    assert fragment.status_code == 200
    rows = re.findall(r'<tr class="changed">', fragment.text)
    assert len(rows) == len(changed)


def test_its_attention_comes_through_the_api(client):
    answer = client.post("/api/attention", json={"model": MODEL, "text": TEXT, "stack": "attn", "layer": 1})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["weights"]["shape"][0] == N_HEADS and body["query_tokens"][1:4] == ["the", "king", "saw"]
    ablated = client.post(
        "/api/translate", json={"model": MODEL, "text": TEXT}
    )  # a language model translates nothing: refused, naming where its views are
    assert (
        ablated.status_code == 400
        and "its views are on the FF memories (/ff) and explore (/explore) pages" in ablated.json()["detail"]
    )


def test_explore_shows_its_attention_and_a_head_ablation_changes_it(client):
    page = client.get("/explore", params={"model": MODEL})
    assert page.status_code == 200 and '<option value="attn">attn</option>' in page.text
    plain = client.post("/api/explore", json={"model": MODEL, "text": TEXT, "stack": "attn", "layer": 1}).json()
    ablated = client.post(
        "/api/explore",
        json={"model": MODEL, "text": TEXT, "stack": "attn", "layer": 1,
              "interventions": [{"kind": "scale", "hook": "layers.0.attn.z", "axis": "head", "index": [1]}]},
    ).json()  # fmt: skip
    assert ablated["plain_output"] == plain["output"] and ablated["output"] != plain["output"]
    assert re.fullmatch(r"layers\.0\.attn\.z head 1 zeroed: \d+ words? changed, marked", ablated["note"])
    assert ablated["attention"]["weights"]["bdata"] != plain["attention"]["weights"]["bdata"]  # layer 1 reads it
    fragment = client.post(
        "/explore/run",
        data={"model": MODEL, "text": TEXT, "stack": "attn", "layer": "1", "ablate": "layers.0.attn:1"},
        headers=HTMX,
    )
    assert fragment.status_code == 200 and 'id="figure-data-heatmap"' in fragment.text
    plain_shown = re.search(r'<span id="continuation-plain">(.*?)</span>', fragment.text, re.S)
    assert plain_shown is not None and plain_shown.group(1) == html.escape(plain["output"], quote=False)
    lesioned_shown = re.search(r'<span id="continuation-lesioned">(.*?)</span></p>', fragment.text, re.S)
    assert lesioned_shown is not None
    marked = re.findall(r'<span class="diff-(added|removed|same)">(.*?)</span>', lesioned_shown.group(1))
    assert {"added", "removed"} & {kind for kind, _ in marked}  # the changed words are marked
    kept = " ".join(text for kind, text in marked if kind in ("same", "added"))
    assert kept.split() == ablated["output"].split()  # the marked words spell the lesioned continuation


def test_explore_continues_a_language_model_by_the_tokens_asked(client):
    short = client.post("/api/explore", json={"model": MODEL, "text": TEXT, "stack": "attn", "new_tokens": 2})
    longer = client.post("/api/explore", json={"model": MODEL, "text": TEXT, "stack": "attn", "new_tokens": 6})
    assert short.status_code == 200 and longer.status_code == 200, longer.text
    assert len(short.json()["output"].split()) == 2 and len(longer.json()["output"].split()) == 6  # one word a token
    assert longer.json()["output"].startswith(short.json()["output"])  # greedy: the same start
    too_many = client.post("/api/explore", json={"model": MODEL, "text": TEXT, "new_tokens": 10_000})
    assert too_many.status_code == 422
