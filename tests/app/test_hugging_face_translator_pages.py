"""A researcher's own Hugging Face translators (tiny T5 and Marian folders) served from a models folder: listed with
what they can do, translated through the API as Hugging Face's own `generate` translates, their attention on the
explore page surviving a cross-attention head ablation, source attribution on the focus page, FF keys and a key
edit, compare, and the upload page grouping them by the source language their memlens.json names."""

from __future__ import annotations

import json
import re

import pytest
import torch
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from inference.core.checkpoint import load_checkpoint
from tests.app.conftest import HTMX
from tests.hugging_face_models import D_FF, EOS, PAD, build_folder

TEXT = "the king saw a dog in the city"


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    models = tmp_path_factory.mktemp("translators")
    build_folder("t5", models / "my_t5")
    build_folder("marian", models / "my_marian", scale_embedding=True)
    (models / "my_marian" / "memlens.json").write_text(json.dumps({"source_language": "English"}))
    return models


@pytest.fixture(scope="module")
def client(tmp_path_factory, checkpoint_dir, models_dir):
    settings = Settings(checkpoint_dir=checkpoint_dir, models_dirs=[models_dir], device="cpu", max_new_tokens=8,
                        database=tmp_path_factory.mktemp("hf_db") / "memlens.sqlite3")  # fmt: skip
    with TestClient(create_app(settings)) as client:
        yield client


def test_they_are_listed_as_translators_with_their_source_language(client):
    listed = {m["name"]: m for m in client.get("/api/models").json()["models"]}
    for name in ("my_t5", "my_marian"):
        assert sorted(listed[name]["capabilities"]) == [
            "attention",
            "beam_search",
            "ff_keys",
            "source_attribution",
            "translates",
        ]
    assert listed["my_t5"]["meta"] == {"version": 2, "format": "Hugging Face", "source_language": "not stated"}
    assert listed["my_marian"]["meta"]["source_language"] == "English"
    home = client.get("/").text
    for page in ("explore", "ff", "focus"):
        assert f'href="/{page}?model=my_t5"' in home


@pytest.mark.parametrize("name", ["my_t5", "my_marian"])
def test_the_api_translates_as_hugging_face_s_generate_does(client, models_dir, name):
    answer = client.post("/api/translate", json={"model": name, "text": TEXT})
    assert answer.status_code == 200, answer.text
    loaded = load_checkpoint(models_dir / name, "cpu")
    src_ids = torch.tensor([loaded.tokenizer.encode(TEXT) + [EOS]])
    with torch.no_grad():
        theirs = loaded.model.hf.generate(
            input_ids=src_ids, attention_mask=torch.ones_like(src_ids), max_new_tokens=8, num_beams=1,
            do_sample=False, decoder_start_token_id=PAD, eos_token_id=EOS, pad_token_id=PAD, bad_words_ids=[[PAD]],
            forced_eos_token_id=None,
        )[0].tolist()[1:]  # fmt: skip
    theirs = theirs[: theirs.index(EOS)] if EOS in theirs else theirs
    assert answer.json()["translation"] == loaded.tokenizer.decode(theirs)
    assert answer.json()["tokens"]["enc"] == TEXT.split() + ["</s>"]


def test_explore_shows_cross_attention_and_a_head_ablation_changes_the_next_layer(client):
    request = {"model": "my_t5", "text": TEXT, "stack": "decoder.cross_attn", "layer": 1}
    plain = client.post("/api/explore", json=request).json()
    ablation = [{"kind": "scale", "hook": "decoder.layers.0.cross_attn.z", "axis": "head", "index": [1]}]
    ablated = client.post("/api/explore", json={**request, "interventions": ablation}).json()
    assert ablated["plain_output"] == plain["output"]
    assert ablated["note"].startswith("decoder.layers.0.cross_attn.z head 1 zeroed")
    assert ablated["attention"]["weights"]["bdata"] != plain["attention"]["weights"]["bdata"]
    assert plain["attention"]["key_tokens"] == TEXT.split() + ["</s>"]
    page = client.get("/explore", params={"model": "my_t5"})
    assert page.status_code == 200 and '<option value="decoder.cross_attn">' in page.text
    fragment = client.post(
        "/explore/run",
        data={"model": "my_t5", "text": TEXT, "stack": "decoder.cross_attn", "layer": "1",
              "ablate": "decoder.layers.0.cross_attn:1"},
        headers=HTMX,
    )  # fmt: skip
    assert fragment.status_code == 200 and 'id="figure-data-heatmap"' in fragment.text


def test_focus_attributes_each_output_token_onto_the_source(client):
    answer = client.post("/api/focus", json={"model": "my_marian", "text": TEXT})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["source_tokens"] == TEXT.split() + ["</s>"]
    assert len(body["integrated_gradients"]) == len(body["output_tokens"])
    assert all(len(row) == len(body["source_tokens"]) for row in body["integrated_gradients"])
    assert body["attention_stack"] == "decoder.cross_attn layer 1"  # the last layer's cross-attention beside it
    unknown = client.post("/api/focus", json={"model": "my_marian", "text": "the kingz saw"})
    assert unknown.status_code == 400 and unknown.json()["detail"] == "the model's vocabulary has no token for 'kingz'"


def test_the_ff_page_shows_decoder_keys_and_an_edit_changes_a_prediction(client):
    keys = client.get("/ff/keys", params={"model": "my_t5", "layer": 1, "key": "3"}, headers=HTMX)
    assert keys.status_code == 200 and 'data-key="decoder.layers.1.ff:3"' in keys.text
    every_key = list(range(D_FF))
    lens = client.post(
        "/api/ff/lens",
        json={"model": "my_t5", "text": TEXT, "interventions": [
            {"kind": "scale", "hook": f"decoder.layers.{layer}.ff.keys", "axis": "ff_key", "index": every_key,
             "factor": 0} for layer in range(2)]},
    ).json()  # fmt: skip
    assert lens["output"] != lens["plain_output"], "zeroing every decoder FF key changes no output token"
    first = lens["prediction_changes"][0]  # the first output token, read from the decoder start token
    assert first["before_probability"] != first["after_probability"]
    edits = "; ".join(f"decoder.layers.{layer}.ff:{','.join(map(str, every_key))} x0" for layer in range(2))
    fragment = client.post("/ff/run", data={"model": "my_t5", "text": TEXT, "edits": edits}, headers=HTMX)
    assert fragment.status_code == 200
    assert lens["output"] in fragment.text and lens["plain_output"] in fragment.text


def test_compare_and_upload_take_them_as_translators(client):
    compared = client.post("/api/compare", json={"models": ["my_t5", "my_marian"], "text": TEXT})
    assert compared.status_code == 200, compared.text
    for row in compared.json()["models"]:
        alone = client.post("/api/translate", json={"model": row["model"], "text": TEXT}).json()
        assert row["translation"] == alone["translation"]
    upload = client.get("/upload").text
    assert re.search(r"English.*my_marian", upload, re.S) and re.search(r"not stated.*my_t5", upload, re.S)
