"""An upload never fails on a model the Upload page offers: every offered shipped model translates a small corpus
in its own source language, a task model (bit strings) is not offered, and a family that traces one source length at
a time (the Neural GPUs) gets its sentences of different lengths in batches it can take."""

from __future__ import annotations

import re

import pytest

from inference.corpus_jobs.states import length_batches
from tests.app.test_jobs import upload, wait_for

CORPORA = {  # three sentences of different lengths in each source language a shipped model reads
    "German": "Ein Hund läuft.\tA dog runs.\nZwei Männer spielen Fußball im Park.\tTwo men play soccer in the park.\n"
    "Eine Frau in einem roten Kleid liest ein Buch.\tA woman in a red dress reads a book.\n",
    "Russian": "Я люблю чай.\tI love tea.\nОн читает книгу в парке.\tHe reads a book in the park.\n"
    "Мы живём в большом городе у моря.\tWe live in a big city by the sea.\n",
}


def offered(client) -> list[str]:
    return re.findall(r'<option value="([^"]+)"', client.get("/upload").text)


def test_every_offered_model_finishes_an_upload_in_its_language(shipped_client):
    models = offered(shipped_client)
    assert "memtransformer_10" in models and "extended_neural_gpu_de_en" in models and "working_memory_ru_en" in models
    assert not {"neural_gpu_addition", "neural_gpu_reverse", "rmt_copy", "language_model"} & set(models)
    for model in models:
        language = shipped_client.app.state.gateway.registry.entries[model].record.source_language
        job = upload(shipped_client, "three.tsv", CORPORA[language].encode(), model=model).json()
        done = wait_for(shipped_client, job["id"], timeout=300)
        assert done["status"] == "done", f"{model}: {done.get('error')}"
        translations = done["result"]["translations"]
        assert len(translations) == 3 and all(t.strip() for t in translations), f"{model}: {translations}"


def test_a_task_model_is_refused_for_an_upload_with_what_to_choose(shipped_client):
    response = upload(shipped_client, "bits.txt", b"0101+0011\n", model="neural_gpu_addition")
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "neural_gpu_addition reads no natural language (it was trained on the addition task)" in detail
    assert "memtransformer_10" in detail


def test_length_batches_keep_one_length_together_only_where_asked():
    lengths = [5, 3, 5, 9, 3, 5]
    assert length_batches(lengths, 2, mixed=True) == [[1, 4], [0, 2], [5, 3]]  # shortest first, then by position
    assert length_batches(lengths, 2, mixed=False) == [[1, 4], [0, 2], [5], [3]]
    assert sorted(i for batch in length_batches(lengths, 4, mixed=False) for i in batch) == list(range(6))


@pytest.mark.parametrize("mixed", [True, False])
def test_length_batches_never_exceed_the_batch_size(mixed):
    lengths = [n % 4 for n in range(37)]
    assert max(len(batch) for batch in length_batches(lengths, 5, mixed)) == 5
