"""A server over a folder of tiny checkpoints (and one broken one)."""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from inference.core.checkpoint import save_checkpoint
from inference.core.family import LoadedModel
from inference.core.places import REPO_ROOT
from tests.conftest import (
    TINY_CORPUS,
    make_tiny,
    make_tiny_language_model,
    make_tiny_working_memory,
)
from tests.postgres import fresh_database, postgres_server
from training.studies.ff_keys import StudyCorpus, run_study


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server for the test run (tests/postgres.py): its connection string."""
    with postgres_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    """A new, empty job store of each kind: an SQLite file, a database on the test run's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.sqlite3'}"
    return fresh_database(request.getfixturevalue("postgres"))


@pytest.fixture(scope="session")
def checkpoint_dir(tmp_path_factory, tiny_tokenizer):
    root = tmp_path_factory.mktemp("checkpoints")
    for family in ("transformer", "memtransformer", "membottleneck"):
        loaded = make_tiny(family, tiny_tokenizer)
        save_checkpoint(
            root / f"tiny_{family}",
            loaded.model,
            loaded.tokenizer,
            meta={"training_data": "tiny test corpus", "source_language": "German"},
            metrics={"bleu": {"val": 1.5, "test_2016_flickr": 2.5}},
        )
    wm = make_tiny_working_memory(tiny_tokenizer)
    save_checkpoint(
        root / "tiny_working_memory",
        wm.model,
        wm.tokenizer,
        meta={"training_data": "tiny test corpus", "source_language": "Russian"},
        metrics={"bleu": {"val": 1.0, "test_tatoeba": 2.0}},
    )
    lm = LoadedModel("tiny_language_model", make_tiny_language_model(tiny_tokenizer), tiny_tokenizer)
    save_checkpoint(
        root / lm.name,
        lm.model,
        lm.tokenizer,
        meta={"training_data": "tiny test corpus"},
        metrics={"word_perplexity": {"wikitext103_test": 900.0}},
    )
    english = TINY_CORPUS[1::2]
    run_study(
        lm,
        root / lm.name,
        StudyCorpus("tiny English", english, None, english, None),
        tmp_path_factory.mktemp("lm_study"),
        batch_size=2,
        top_k=3,
    )
    translator = make_tiny("memtransformer", tiny_tokenizer)
    run_study(
        translator,
        root / "tiny_memtransformer",
        StudyCorpus("tiny pairs", english, TINY_CORPUS[0::2], english, TINY_CORPUS[0::2]),
        tmp_path_factory.mktemp("mt_study"),
        batch_size=2,
        top_k=3,
    )
    shutil.copytree(REPO_ROOT / "checkpoints" / "neural_gpu_addition", root / "neural_gpu_addition")  # 140 kB, real
    shutil.copytree(REPO_ROOT / "checkpoints" / "extended_neural_gpu_de_en", root / "extended_neural_gpu_de_en")
    (root / "broken_model").mkdir()
    (root / "broken_model" / "config.json").write_text("{oops")
    shutil.copytree(
        root / "tiny_transformer", root / "broken_tokenizer"
    )  # sound weights, a tokenizer that does not load
    (root / "broken_tokenizer" / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "Nonsense"}}')
    return root


@pytest.fixture(scope="session")
def settings(checkpoint_dir, tmp_path_factory) -> Settings:
    return Settings(
        checkpoint_dir=checkpoint_dir,
        device="cpu",
        max_text_chars=300,
        max_source_tokens=40,
        max_new_tokens=12,
        max_upload_bytes=2000,
        max_upload_lines=20,
        database=tmp_path_factory.mktemp("db") / "memlens.sqlite3",
    )


@pytest.fixture(scope="session")
def segments_client(segment_checkpoints, tmp_path_factory):
    """A server on two briefly trained segment models (tests/conftest.py: segment_checkpoints)."""
    settings = Settings(checkpoint_dir=segment_checkpoints, device="cpu",
                        database=tmp_path_factory.mktemp("segments_db") / "memlens.sqlite3")  # fmt: skip
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture(scope="session")
def shipped_client(tmp_path_factory):
    """A server on the shipped checkpoints (the pages of paper 001's models are tested on the trained ones)."""
    database = tmp_path_factory.mktemp("shipped_db") / "memlens.sqlite3"
    settings = Settings(checkpoint_dir=REPO_ROOT / "checkpoints", device="cpu", database=database)
    with TestClient(create_app(settings)) as client:
        yield client


@pytest.fixture(scope="session")
def client(settings):
    with TestClient(create_app(settings)) as client:
        yield client


HTMX = {"HX-Request": "true"}


def compared_page(client, form: dict) -> str:
    """What the Compare page shows after a run, as a browser assembles it: /compare/run's table, then each row's and
    the figure's own request (hx-trigger="load", their fields in hx-vals), each swapped in for its placeholder."""
    table = client.post("/compare/run", data=form, headers=HTMX)
    assert table.status_code == 200, table.text
    page = table.text
    for element in re.findall(r"<(?:tr|div)[^>]*hx-trigger=\"load\"[^>]*>.*?</(?:tr|div)>", page, flags=re.S):
        path = re.search(r'hx-post="([^"]+)"', element).group(1)
        fields = json.loads(html.unescape(re.search(r"hx-vals='([^']*)'", element).group(1)))
        answer = client.post(path, data=fields, headers=HTMX)
        assert answer.status_code == 200, answer.text
        page = page.replace(element, answer.text)
    return page


def lesion_fields(**kinds: dict) -> dict:
    """The form fields a page sends to ask for lesions (partials/lesions.html: a `lesion` box per kind, a
    `<kind>.<field>` field per value), e.g. lesion_fields(memory_size={"size": 0}) ->
    {"lesion": ["memory_size"], "memory_size.size": 0}."""
    fields = {f"{kind}.{name}": value for kind, values in kinds.items() for name, value in values.items()}
    return {"lesion": list(kinds), **fields}
