"""Corpus quality: sacrebleu's BLEU and chrF, the length ratio, and the signatures printed under tables."""

from __future__ import annotations

import math
from collections import Counter

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


# Scores recomputed by hand from the metrics' definitions, on two sentences without punctuation (13a tokens are
# the words) and the system shorter than the references.
SHORT_REFERENCES = ["the cat sat on the mat", "a dog runs in the park"]
SHORT_HYPOTHESES = ["the cat sat on a mat", "a dog runs in park"]


def chrf_statistics(hypothesis: str, reference: str, order: int = 6) -> list[int]:
    """[hypothesis n-grams, reference n-grams, clipped matches] for each character n-gram order 1..6, spaces
    removed: chrF's sufficient statistics for one sentence (sacrebleu's defaults: nc 6, nw 0)."""
    hyp, ref = "".join(hypothesis.split()), "".join(reference.split())
    statistics = []
    for n in range(1, order + 1):
        hyp_grams = Counter(hyp[i : i + n] for i in range(len(hyp) - n + 1))
        ref_grams = Counter(ref[i : i + n] for i in range(len(ref) - n + 1))
        statistics += [sum(hyp_grams.values()), sum(ref_grams.values()), sum((hyp_grams & ref_grams).values())]
    return statistics


def chrf_from_statistics(statistics, beta: int = 2) -> float:
    """chrF as sacrebleu documents it (Popović 2015): character n-gram precision and recall, each averaged over
    the orders both sides have, then their F-beta (beta 2: recall weighs twice as much), times 100."""
    orders = [statistics[i : i + 3] for i in range(0, len(statistics), 3)]
    present = [(matches / hyp, matches / ref) for hyp, ref, matches in orders if hyp and ref]
    precision = sum(p for p, _ in present) / len(present)
    recall = sum(r for _, r in present) / len(present)
    if not precision + recall:
        return 0.0
    return 100 * (1 + beta**2) * precision * recall / (beta**2 * precision + recall)


def test_bleu_chrf_and_length_ratio_recomputed_by_hand():
    quality = corpus_quality(SHORT_HYPOTHESES, SHORT_REFERENCES)
    # 11 system words against 12 reference words: "the" of "in the park" is missing
    assert quality.length_ratio == pytest.approx(11 / 12, rel=1e-12)
    # Clipped n-gram matches / n-grams of the system, both sentences summed: unigrams 5 + 5 of 6 + 5 ("a" of
    # sentence 1 is not in its reference), bigrams 3 + 3 of 5 + 4, trigrams 2 + 2 of 4 + 3, 4-grams 1 + 1 of 3 + 2.
    precisions = [10 / 11, 6 / 9, 4 / 7, 2 / 5]
    brevity_penalty = math.exp(1 - 12 / 11)  # the system is shorter than the references
    expected_bleu = 100 * brevity_penalty * math.exp(sum(math.log(p) for p in precisions) / 4)
    assert quality.bleu == pytest.approx(expected_bleu, rel=1e-9)
    assert quality.bleu == pytest.approx(sacrebleu.corpus_bleu(SHORT_HYPOTHESES, [SHORT_REFERENCES]).score)
    statistics = [sum(column) for column in zip(*map(chrf_statistics, SHORT_HYPOTHESES, SHORT_REFERENCES))]
    assert quality.chrf == pytest.approx(chrf_from_statistics(statistics), rel=1e-9)
    assert quality.chrf == pytest.approx(sacrebleu.corpus_chrf(SHORT_HYPOTHESES, [SHORT_REFERENCES]).score)
    assert quality.sentences == 2


def test_a_longer_system_has_a_ratio_above_one_and_no_brevity_penalty():
    quality = corpus_quality(SHORT_REFERENCES, SHORT_HYPOTHESES)  # the roles swapped: 12 system words, 11 reference
    assert quality.length_ratio == pytest.approx(12 / 11, rel=1e-12)
    precisions = [10 / 12, 6 / 10, 4 / 8, 2 / 6]  # the same matches over the longer side's n-grams
    assert quality.bleu == pytest.approx(100 * math.exp(sum(math.log(p) for p in precisions) / 4), rel=1e-9)
