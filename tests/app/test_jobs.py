"""Uploads and lesion sweeps: background jobs with progress, persisted results, clear refusals."""

import html
import time

import pytest
import sacrebleu
from fastapi.testclient import TestClient

from app.main import create_app
from tests.app.conftest import HTMX

MODEL = "tiny_memtransformer"
TSV = (
    "ein Hund spielt im Park\ta dog plays in the park\n"
    "zwei Frauen lesen\ttwo women read\n"
    "Kinder spielen\tchildren play\n"
)


def wait_for(client, job_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish in {timeout} s")


def upload(client, name, content, model=MODEL, headers=None):
    return client.post("/api/uploads", data={"model": model}, files={"file": (name, content)}, headers=headers or {})


def test_tsv_upload_gives_translations_bleu_and_blocks(client):
    waited = time.perf_counter()  # from before the upload: the worker may claim the job before its answer arrives
    job = upload(client, "set.tsv", TSV.encode()).json()
    assert job["kind"] == "corpus" and job["total"] == 3 and job["url"] == f"/results/{job['id']}"
    assert job["seconds"] is None  # the job as it was queued
    done = wait_for(client, job["id"])
    waited = time.perf_counter() - waited
    assert done["status"] == "done" and done["done"] == 3
    assert 0 < done["seconds"] <= waited  # its run, within the time the client waited for it
    assert f'<p id="job-time">Ran in {done["seconds"]:.2f} s.</p>' in client.get(done["url"]).text
    result = done["result"]
    assert len(result["translations"]) == 3
    references = [line.split("\t")[1] for line in TSV.splitlines()]
    bleu = sacrebleu.corpus_bleu(result["translations"], [references])
    scored = {  # sacrebleu on the job's own translations against the uploaded references
        "bleu": bleu.score,
        "chrf": sacrebleu.corpus_chrf(result["translations"], [references]).score,
        "length_ratio": bleu.sys_len / bleu.ref_len,
        "sentences": 3,
    }
    assert result["quality"] == pytest.approx(scored) and scored["chrf"] > 0
    stacks = {b["stack"] for b in result["blocks"]}
    assert stacks == {"encoder.attn", "decoder.self_attn", "decoder.cross_attn"}
    page = client.get(done["url"]).text
    assert (
        'id="bleu"' in page
        and "Kinder spielen" in page
        and "/explore?model=tiny_memtransformer&text=Kinder%20spielen" in page
    )
    assert 'id="figure-data-encoder-attn"' in page


def test_txt_upload_has_no_bleu(client):
    job = wait_for(client, upload(client, "plain.txt", b"ein Hund\nzwei Katzen\n").json()["id"])
    assert job["status"] == "done" and job["result"]["quality"] is None
    assert "No references" in client.get(job["url"]).text


def test_result_survives_a_restart(client, settings):
    job = wait_for(client, upload(client, "again.tsv", TSV.encode()).json()["id"])
    with TestClient(create_app(settings)) as restarted:
        assert restarted.get(f"/api/jobs/{job['id']}").json()["result"] == job["result"]
        assert 'id="bleu"' in restarted.get(job["url"]).text


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("set.tsv", "zwei Männer\ttwo men\n".encode("latin-1"), "not UTF-8"),
        ("set.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary"),
        ("big.txt", ("ein Hund\n" * 300).encode(), "the limit is 2,000"),
        ("set.csv", b"ein Hund,a dog\n", "upload a .txt"),
        ("empty.txt", b"\n \n", "holds no sentence"),
        ("bad.tsv", b"ein Hund\ta dog\nnur eine Spalte\n", "line 2: expected source<TAB>reference"),
        ("many.txt", "".join(f"Satz {i}\n" for i in range(21)).encode(), "21 sentences; the limit is 20"),
        ("long.txt", ("Hund " * 50 + "\n").encode(), "line 1: the text has"),
    ],
)
def test_bad_uploads_are_refused(client, name, content, message):
    response = upload(client, name, content)
    assert response.status_code == 400, response.text
    assert message in response.json()["detail"]
    fragment = client.post("/upload", data={"model": MODEL}, files={"file": (name, content)}, headers=HTMX)
    assert (
        fragment.status_code == 400
        and fragment.headers["HX-Retarget"] == "#errors"
        and html.escape(message) in fragment.text
    )


def test_upload_to_unknown_model_is_404(client):
    assert upload(client, "set.tsv", TSV.encode(), model="nope").status_code == 404


def test_upload_page_redirects_to_permalink(client):
    response = client.post("/upload", data={"model": MODEL}, files={"file": ("set.tsv", TSV.encode())}, headers=HTMX)
    assert response.status_code == 204 and response.headers["HX-Redirect"].startswith("/results/")
    assert "set.tsv" in client.get("/upload").text


def test_lesion_sweep_on_demo_set_is_cached(client):
    job = client.post("/api/sweeps", json={"model": MODEL}).json()
    done = wait_for(client, job["id"])
    assert done["result"]["memory_size"] == [0, 2, 3, 5] and len(done["result"]["bleu"]) == 4
    assert done["result"]["trained"] == 3 and done["result"]["sentences"] == 12
    assert client.post("/api/sweeps", json={"model": MODEL}).json()["id"] == job["id"]
    assert 'id="figure-data-sweep"' in client.get(done["url"]).text


def test_lesion_sweep_on_uploaded_set(client):
    corpus = wait_for(client, upload(client, "sweep.tsv", TSV.encode()).json()["id"])
    done = wait_for(client, client.post("/api/sweeps", json={"model": MODEL, "reference": corpus["id"]}).json()["id"])
    assert done["status"] == "done" and done["result"]["sentences"] == 3


@pytest.mark.parametrize(
    "body, status, message",
    [
        (
            {"model": "tiny_transformer"},
            400,
            "tiny_transformer is not a memory-lesion model: its views are on the explore (/explore) and FF memories "
            "(/ff) pages; "
            "memory-lesion models: tiny_membottleneck, tiny_memtransformer",
        ),
        ({"model": MODEL, "reference": "000000000000"}, 400, "no uploaded corpus"),
        ({"model": "nope"}, 404, "unknown model"),
    ],
)
def test_bad_sweeps_are_refused(client, body, status, message):
    response = client.post("/api/sweeps", json=body)
    assert response.status_code == status and message in response.json()["detail"]


def test_sweep_needs_references(client):
    corpus = wait_for(client, upload(client, "norefs.txt", b"ein Hund\n").json()["id"])
    response = client.post("/api/sweeps", json={"model": MODEL, "reference": corpus["id"]})
    assert response.status_code == 400 and "has no references" in response.json()["detail"]


def test_unknown_job_is_404_and_a_malformed_id_is_422(client):
    assert client.get("/api/jobs/0123456789ab").status_code == 404
    assert client.get("/api/jobs/nope").status_code == 422
    assert client.get("/results/nope").status_code == 404


def test_sweep_on_multi30k_needs_the_data_directory(client, settings, tmp_path):
    settings_without_data = settings.model_copy(update={"data_dir": tmp_path / "no-data"})
    with TestClient(create_app(settings_without_data)) as other:
        response = other.post("/api/sweeps", json={"model": MODEL, "reference": "multi30k_test_2016"})
    detail = response.json()["detail"]
    assert response.status_code == 400 and "Multi30k test set is not in the server's data directory" in detail
    assert str(tmp_path) not in detail and "/" not in detail.replace(
        "`memlens data fetch multi30k`", ""
    )  # no server path reaches a client


@pytest.mark.needs_corpus("multi30k")
def test_multi30k_reference_set_reads_the_data_directory(client):
    sources, references = client.app.state.jobs.reference_set("multi30k_test_2016")
    assert len(sources) == len(references) == 1000
    assert sources[0] and references[0]
