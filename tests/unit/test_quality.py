"""Corpus quality: sacrebleu's BLEU and chrF, the length ratio, and the signatures printed under tables."""

from __future__ import annotations

import pytest
import sacrebleu

from inference.analyses.quality import corpus_quality, signatures

REFERENCES = ["a dog runs in a park", "the cat sits on the mat", "two men play football"]
HYPOTHESES = ["a dog runs in the park", "the cat sits", "two men are playing football on a field"]


def test_scores_are_sacrebleus_and_the_length_ratio_counts_words():
    quality = corpus_quality(HYPOTHESES, REFERENCES)
    assert quality.bleu == pytest.approx(sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score)
    assert quality.chrf == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score)
    assert quality.length_ratio == pytest.approx((6 + 3 + 8) / (6 + 6 + 4))  # no punctuation: 13a tokens are words
    assert quality.sentences == 3


def test_a_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="2 hypotheses but 3 references"):
        corpus_quality(HYPOTHESES[:2], REFERENCES)


def test_signatures_name_the_tokenizer_and_one_reference():
    names = signatures()
    assert "nrefs:1" in names["bleu"] and "tok:13a" in names["bleu"] and "smooth:exp" in names["bleu"]
    assert "nrefs:1" in names["chrf"] and "nc:6" in names["chrf"]
