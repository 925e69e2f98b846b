"""Text reaches the reader escaped exactly once, and a byte-level BPE model's tokens read as text: every page and
run fragment of a byte-level Llama (its BOS "<s>", an added "<|im_start|>"), the tiny language model ("<eos>") and
a tiny translator is free of twice-escaped entities, and no figure label shows the byte alphabet ("Ġ", "Ċ") or
mojibake ("Ã", "â")."""

from __future__ import annotations

import html
import json
import re

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.app.conftest import HTMX
from tests.hugging_face_models import build_folder

BYTE_MODEL = "byte_llama"
TWICE_ESCAPED = re.compile(r"&amp;(lt|gt|quot|amp|#\d+|#x[0-9a-f]+);")
ALPHABET_OR_MOJIBAKE = ("Ġ", "Ċ", "ĉ", "Ã", "â")
FIGURE_DATA = re.compile(r'<script type="application/json" id="figure-data-[^"]*">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def client(tmp_path_factory, checkpoint_dir):
    models = tmp_path_factory.mktemp("models")
    build_folder("llama", models / BYTE_MODEL, byte_level=True)
    settings = Settings(checkpoint_dir=checkpoint_dir, models_dirs=[models], device="cpu", max_new_tokens=12,
                        database=tmp_path_factory.mktemp("text_db") / "memlens.sqlite3")  # fmt: skip
    with TestClient(create_app(settings)) as client:
        yield client


def labels(page: str) -> list[str]:
    """Every axis label and tick text of every figure in a page."""
    found = []
    for data in FIGURE_DATA.findall(page):
        figure = json.loads(data)
        for trace in figure["data"]:
            found += [str(v) for axis in ("x", "y") for v in (trace.get(axis) or []) if isinstance(v, str)]
        for key, axis in figure["layout"].items():
            if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                found += [str(v) for v in axis.get("ticktext") or []]
    return found


@pytest.mark.parametrize(
    ("model", "text"),
    [
        (BYTE_MODEL, 'The king said: "Paris – naïve"\n\tcafé & crème'),
        ("tiny_language_model", 'the cat sat & "the" dog <b>'),
        ("tiny_memtransformer", 'ein Hund & "die" Katze <b>'),
    ],
)
def test_explore_escapes_once_and_labels_read_as_text(client, model, text):
    page = client.get("/explore", params={"model": model})
    assert page.status_code == 200 and not TWICE_ESCAPED.search(page.text)
    fragment = client.post("/explore/run", data={"model": model, "text": text}, headers=HTMX)
    assert fragment.status_code == 200, fragment.text
    assert not TWICE_ESCAPED.search(fragment.text), TWICE_ESCAPED.search(fragment.text)
    source = re.search(r'<span class="source">(.*?)</span>', fragment.text, re.S)
    assert source is not None and "<" not in source.group(1)
    assert html.unescape(source.group(1)) == text  # unescaped once, it is the text sent: escaped exactly once
    shown = labels(fragment.text)
    assert shown, "the fragment has figures with labels"
    assert not [label for label in shown if any(mark in label for mark in ALPHABET_OR_MOJIBAKE)]


def test_the_byte_level_models_ff_page_escapes_once_and_reads_its_tokens(client):
    page = client.get("/ff", params={"model": BYTE_MODEL})
    assert page.status_code == 200 and not TWICE_ESCAPED.search(page.text)
    fragment = client.post("/ff/run", data={"model": BYTE_MODEL, "text": "The queen said: café"}, headers=HTMX)
    assert fragment.status_code == 200, fragment.text
    assert not TWICE_ESCAPED.search(fragment.text)
    assert not any(mark in fragment.text for mark in ("Ġ", "Ċ", "Ã"))
