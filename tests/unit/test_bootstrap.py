"""Paired bootstrap intervals of a perplexity difference over documents."""

from __future__ import annotations

import math

import pytest

from training.bootstrap import paired_perplexity_difference

TOKENS = [40, 25, 60, 35, 50, 30, 45, 55]


def test_the_point_estimate_is_the_difference_of_pooled_perplexities():
    a, b = [80.0, 60.0], [70.0, 40.0]
    difference, low, high = paired_perplexity_difference(a, b, [20, 30], seed=0)
    assert difference == pytest.approx(math.exp(140 / 50) - math.exp(110 / 50))
    assert low <= difference <= high


def test_the_same_model_differs_by_nothing():
    nll = [3.0 * t for t in TOKENS]
    assert paired_perplexity_difference(nll, nll, TOKENS, seed=0) == (0.0, 0.0, 0.0)


def test_a_model_worse_on_every_document_has_an_interval_above_zero():
    b = [3.0 * t for t in TOKENS]
    a = [nll + 0.1 * t for nll, t in zip(b, TOKENS)]  # 0.1 nats per token worse everywhere
    difference, low, high = paired_perplexity_difference(a, b, TOKENS, seed=0)
    assert 0 < low <= difference <= high


def test_a_model_better_on_half_the_documents_and_worse_on_the_rest_has_an_interval_across_zero():
    b = [3.0 * t for t in TOKENS]
    a = [nll + (0.5 if i % 2 else -0.5) * t for i, (nll, t) in enumerate(zip(b, TOKENS))]
    _, low, high = paired_perplexity_difference(a, b, TOKENS, seed=0)
    assert low < 0 < high
    assert paired_perplexity_difference(a, b, TOKENS, seed=0) == paired_perplexity_difference(a, b, TOKENS, seed=0)


def test_models_must_be_scored_on_the_same_documents():
    with pytest.raises(ValueError, match="same documents"):
        paired_perplexity_difference([1.0, 2.0], [1.0], [1, 1], seed=0)
    with pytest.raises(ValueError, match="same documents"):
        paired_perplexity_difference([], [], [], seed=0)


def test_paired_bleu_difference_matches_sacrebleu_and_its_interval_excludes_zero_only_for_a_real_gap():
    import sacrebleu

    from training.bootstrap import paired_bleu_difference

    references = [f"a dog number {i} runs in the park" for i in range(60)]
    good = [f"a dog number {i} runs in a park" if i % 3 else f"one dog {i} runs" for i in range(60)]
    bad = [f"the cat {i} sits" for i in range(60)]
    value, low, high = paired_bleu_difference(good, bad, references, seed=0, resamples=200)
    expected = sacrebleu.corpus_bleu(good, [references]).score - sacrebleu.corpus_bleu(bad, [references]).score
    assert value == pytest.approx(expected) and 0 < low < value < high
    assert paired_bleu_difference(good, good, references, seed=0, resamples=50) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="every reference"):
        paired_bleu_difference(good[:3], bad, references, seed=0)
