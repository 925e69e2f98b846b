"""Upload a .tsv corpus in the browser and see its BLEU on the result permalink."""

from __future__ import annotations

import sacrebleu

from app.services.demo import demo_sentences
from tests.e2e.conftest import upload_demo_corpus

MODEL = "memtransformer_10"


def test_upload_tsv_and_see_bleu(page, server_url, tmp_path):
    upload_demo_corpus(page, server_url, MODEL, tmp_path)
    page.wait_for_selector("#bleu", timeout=60_000)
    bleu = float(page.text_content("#bleu"))
    assert page.locator("table.sentences tbody tr").count() == 6
    translations = page.locator("table.sentences tbody tr td:nth-child(3)").all_text_contents()
    references = [d.reference for d in demo_sentences()[:6]]  # what upload_demo_corpus uploaded
    expected = sacrebleu.corpus_bleu(translations, [references]).score  # of the translations the page shows
    assert expected > 0 and page.text_content("#bleu") == f"{expected:.2f}"
    page.wait_for_selector("#figure-encoder-attn .main-svg")
    permalink = page.url
    page.reload()
    assert float(page.text_content("#bleu")) == bleu, "a reload must show the same stored result"
    assert page.url == permalink


def test_bad_upload_shows_error(page, server_url, tmp_path):
    binary = tmp_path / "image.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    page.goto(f"{server_url}/upload")
    page.set_input_files("input[name=file]", str(binary))
    page.click("#upload button[type=submit]")
    page.wait_for_selector("#errors .error")
    assert "binary" in page.text_content("#errors")
