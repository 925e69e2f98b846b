"""Trigger mining over a researcher's own corpus, as a job of the server: a .txt uploaded for a Hugging Face GPT-2,
the demo set for a Hugging Face T5; the key browser then shows the mined triggers, whose coefficients are each
key's largest activation in a sentence, recomputed here from traces of those sentences. Bad requests are 4xx."""

from __future__ import annotations

import re

import pytest
import torch
from fastapi.testclient import TestClient

from app.main import create_app
from app.services.demo import demo_sentences
from app.settings import Settings
from inference.core.checkpoint import load_checkpoint
from inference.core.tracing import run_with_trace
from tests.app.conftest import HTMX
from tests.app.test_jobs import wait_for
from tests.hugging_face_models import WORDS, build_folder

LINES = [" ".join(WORDS[(7 * i + j) % len(WORDS)] for j in range(6 + i % 5)) for i in range(40)]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    models = tmp_path_factory.mktemp("mining_models")
    build_folder("gpt2", models / "my_gpt2")
    build_folder("t5", models / "my_t5")
    return models


@pytest.fixture(scope="module")
def client(tmp_path_factory, checkpoint_dir, models_dir):
    settings = Settings(checkpoint_dir=checkpoint_dir, models_dirs=[models_dir], device="cpu", max_new_tokens=8,
                        database=tmp_path_factory.mktemp("mining_db") / "memlens.sqlite3")  # fmt: skip
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture(scope="module")
def gpt2_job(client):
    corpus = ("\n".join(LINES) + "\n").encode()
    submitted = client.post("/api/ff/mining", data={"model": "my_gpt2"}, files={"file": ("mine.txt", corpus)})
    assert submitted.status_code == 200, submitted.text
    job = wait_for(client, submitted.json()["id"])
    assert job["status"] == "done", job["error"]
    return job


def test_a_mined_trigger_is_its_key_s_peak_activation_in_that_sentence(client, models_dir, gpt2_job):
    assert gpt2_job["kind"] == "mining" and gpt2_job["result"]["sentences"] == len(LINES)
    layer, key = 1, 5
    cards = client.post("/api/ff/keys", json={"model": "my_gpt2", "layer": layer, "keys": [key], "triggers": 10,
                                              "mined": gpt2_job["id"]}).json()["keys"]  # fmt: skip
    triggers = cards[0]["triggers"]
    assert triggers, "key 5 never fired on 40 sentences"
    loaded = load_checkpoint(models_dir / "my_gpt2", "cpu")
    peaks = []  # every sentence's peak coefficient of the key over its prefixes (the last position has no next token)
    for line in LINES:
        keys = run_with_trace(loaded, line, names=[f"layers.{layer}.ff.keys"], max_new_tokens=0)
        peaks.append(float(keys.tensor(f"layers.{layer}.ff.keys")[0, :-1, key].max()))
    best = sorted(peaks, reverse=True)[: len(triggers)]
    mined = [t["coefficient"] for t in triggers]
    assert mined == sorted(mined, reverse=True)
    torch.testing.assert_close(torch.tensor(mined), torch.tensor(best), atol=2e-3, rtol=1e-3)  # stored as float16
    stored = client.post("/api/ff/keys", json={"model": "my_gpt2", "layer": layer, "keys": [key]}).json()["keys"]
    assert stored[0]["triggers"] == []  # the folder has no stored study: the mined triggers came from the job


def test_the_pages_link_the_job_and_show_its_triggers(client, gpt2_job):
    result = client.get(f"/results/{gpt2_job['id']}").text
    assert "<h1>Trigger mining · my_gpt2 · mine.txt</h1>" in result
    assert f'href="/ff?model=my_gpt2&mined={gpt2_job["id"]}"' in result
    page = client.get("/ff", params={"model": "my_gpt2", "mined": gpt2_job["id"]})
    assert page.status_code == 200 and 'id="mined-note"' in page.text
    assert f'<input type="hidden" name="mined" value="{gpt2_job["id"]}">' in page.text
    cards = client.get("/ff/keys", params={"model": "my_gpt2", "layer": 1, "key": "5", "mined": gpt2_job["id"]},
                       headers=HTMX)  # fmt: skip
    assert cards.status_code == 200 and len(re.findall(r'<ol class="triggers">', cards.text)) == 1
    form = client.post("/ff/mine", data={"model": "my_gpt2", "corpus": "demo"}, files={"file": ("", b"")},
                       follow_redirects=False)  # fmt: skip
    assert form.status_code == 303 and form.headers["location"].startswith("/results/")


def test_a_translator_is_mined_on_pairs_of_a_set_the_server_has(client):
    submitted = client.post("/api/ff/mining", data={"model": "my_t5", "corpus": "demo"})
    assert submitted.status_code == 200, submitted.text
    job = wait_for(client, submitted.json()["id"])
    assert job["status"] == "done", job["error"]
    assert job["result"]["sentences"] == len(demo_sentences())
    assert job["result"]["layers"] == ["decoder.layers.0.ff", "decoder.layers.1.ff"]
    text_only = client.post("/api/ff/mining", data={"model": "my_t5"}, files={"file": ("mine.txt", b"a dog\n")})
    assert text_only.status_code == 400 and "mined on pairs" in text_only.json()["detail"]


def test_bad_mining_requests_are_refused(client, gpt2_job):
    both = client.post("/api/ff/mining", data={"model": "my_gpt2", "corpus": "demo"},
                       files={"file": ("mine.txt", b"the cat\n")})  # fmt: skip
    assert both.status_code == 400 and "not both" in both.json()["detail"]
    neither = client.post("/api/ff/mining", data={"model": "my_gpt2"})
    assert neither.status_code == 400
    other = client.post("/api/ff/keys", json={"model": "my_t5", "layer": 0, "mined": gpt2_job["id"]})
    assert other.status_code == 400 and "mined my_gpt2, not my_t5" in other.json()["detail"]
    unknown = client.post("/api/ff/keys", json={"model": "my_gpt2", "layer": 0, "mined": "0123456789ab"})
    assert unknown.status_code == 400 and "no trigger mining job" in unknown.json()["detail"]
    malformed = client.post("/api/ff/keys", json={"model": "my_gpt2", "layer": 0, "mined": "../etc"})
    assert malformed.status_code == 422
    binary = client.post("/api/ff/mining", data={"model": "my_gpt2"}, files={"file": ("mine.txt", b"\x00\x01")})
    assert binary.status_code == 400 and "binary" in binary.json()["detail"]


def test_a_server_set_over_the_line_limit_is_refused(tmp_path, checkpoint_dir, models_dir):
    settings = Settings(checkpoint_dir=checkpoint_dir, models_dirs=[models_dir], device="cpu", max_upload_lines=3,
                        database=tmp_path / "memlens.sqlite3")  # fmt: skip
    with TestClient(create_app(settings)) as small:
        refused = small.post("/api/ff/mining", data={"model": "my_gpt2", "corpus": "demo"})
    assert refused.status_code == 400
    assert refused.json()["detail"] == f"demo has {len(demo_sentences())} sentences; a job's corpus is at most 3"
