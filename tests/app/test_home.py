"""The Models table: every metric under its own header, its test set named;
a perplexity never under a BLEU header (tiny checkpoints and the shipped ones)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from inference.core.places import REPO_ROOT


class ModelsTable(HTMLParser):
    """The header row and the body rows of table.models, as text."""

    def __init__(self):
        super().__init__()
        self.inside, self.cell, self.rows = False, None, []

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("class", "models") in attrs:
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.cell = ""
        elif self.cell is not None and tag == "br":
            self.cell += " "

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif self.inside and tag in ("td", "th"):
            self.rows[-1].append(" ".join(self.cell.split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def models_table(page: str) -> dict[str, dict[str, str]]:
    """{model name: {header: cell}}."""
    parser = ModelsTable()
    parser.feed(page)
    header, *rows = parser.rows
    assert all(len(row) == len(header) for row in rows)
    return {
        row[0].split()[0]: dict(zip(header, row)) for row in rows
    }  # the model cell: its name, then links to its pages


def assert_no_perplexity_under_bleu(table: dict[str, dict[str, str]], language_models: list[str]) -> None:
    for model, cells in table.items():
        for header, cell in cells.items():
            if header.startswith("BLEU") and model in language_models:
                assert cell == "-", f"{model}: {cell} under {header!r}"
            if header.startswith("word perplexity") and model not in language_models:
                assert cell == "-", f"{model}: {cell} under {header!r}"


def test_tiny_checkpoints_metrics_under_their_own_headers(client):
    table = models_table(client.get("/").text)
    headers = list(table["tiny_memtransformer"])
    assert [h for h in headers if h.startswith(("BLEU", "word perplexity"))] == [
        "BLEU Multi30k test 2016",
        "BLEU Tatoeba test (ru-en)",
        "word perplexity WikiText-103 test",
    ]
    assert table["tiny_memtransformer"]["BLEU Multi30k test 2016"] == "2.50"
    assert table["tiny_working_memory"]["BLEU Tatoeba test (ru-en)"] == "2.00"
    assert table["tiny_language_model"]["word perplexity WikiText-103 test"] == "900.0"
    assert_no_perplexity_under_bleu(table, ["tiny_language_model"])
    assert not any("val" in header for header in headers)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    settings = Settings(
        checkpoint_dir=REPO_ROOT / "checkpoints",
        device="cpu",
        database=tmp_path_factory.mktemp("db") / "memlens.sqlite3",
    )
    with TestClient(create_app(settings)) as client:
        yield client


def test_shipped_checkpoints_metrics_under_their_own_headers(shipped):
    table = models_table(shipped.get("/").text)
    assert table["memtransformer_10"]["BLEU Multi30k test 2016"] == "37.03"
    assert table["language_model"]["word perplexity WikiText-103 test"] == "1673.6"
    assert table["language_model"]["word perplexity WikiText-2 test"] == "2015.0"
    assert table["working_memory_ru_en"]["BLEU WMT newstest2019 (ru-en)"] == "5.34"
    assert table["gpt2_enwiki"]["word perplexity WikiText-103 test"] == "1527.0"  # a Hugging Face folder's metrics
    assert table["gpt2_enwiki_memory10"]["word perplexity WikiText-103 test"] == "816.0"
    assert table["rmt10_enwiki_10000steps"]["word perplexity WikiText-103 test"] == "662.1"  # an RMT language model
    language_models = ["language_model", "gpt2_enwiki", "gpt2_enwiki_memory10", "rmt10_enwiki_10000steps"]
    assert_no_perplexity_under_bleu(table, language_models)
