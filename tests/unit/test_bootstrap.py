"""Paired bootstrap intervals of a perplexity difference over documents."""

from __future__ import annotations

import math

import pytest

from training.evaluation.bootstrap import PairedDifference, interval_text, paired_perplexity_difference

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


REFERENCES = [f"a dog number {i} runs in the park" for i in range(60)]
GOOD = [f"a dog number {i} runs in a park" if i % 3 else f"one dog {i} runs" for i in range(60)]


def test_paired_differences_and_p_values_are_sacrebleus(monkeypatch):
    """The same draws, differences and p-values as sacrebleu's own paired bootstrap (PairedTest, 'bs')."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    from training.evaluation.bootstrap import paired_translation_differences

    close = [f"the dog {i} sits in a park" if i % 2 else reference for i, reference in enumerate(REFERENCES)]
    differences = paired_translation_differences(GOOD, close, REFERENCES, seed=3, resamples=300)
    monkeypatch.setenv("SACREBLEU_SEED", "3")
    metrics = {"bleu": BLEU(references=[REFERENCES]), "chrf": CHRF(references=[REFERENCES])}
    _, results = PairedTest([("b", close), ("a", GOOD)], metrics, None, test_type="bs", n_samples=300)()
    for name, column in (("bleu", "BLEU"), ("chrf", "chrF2")):
        baseline, system = results[column]
        assert differences[name].difference == pytest.approx(system.score - baseline.score)
        assert differences[name].p_value == pytest.approx(system.p_value)
    assert 0.05 < differences["bleu"].p_value  # a mixed pair: neither system is shown better
    assert differences["bleu"].low < 0 < differences["bleu"].high and not differences["bleu"].excludes_zero()


def test_a_real_gap_excludes_zero_and_a_system_against_itself_shows_nothing():
    from training.evaluation.bootstrap import paired_translation_differences

    bad = [f"the cat {i} sits" for i in range(60)]
    differences = paired_translation_differences(GOOD, bad, REFERENCES, seed=0, resamples=200)
    for difference in differences.values():
        assert 0 < difference.low < difference.difference < difference.high and difference.excludes_zero()
        assert difference.p_value < 0.01
    same = paired_translation_differences(GOOD, GOOD, REFERENCES, seed=0, resamples=50)["chrf"]
    assert (same.difference, same.low, same.high, same.excludes_zero()) == (0.0, 0.0, 0.0, False)
    with pytest.raises(ValueError, match="every reference"):
        paired_translation_differences(GOOD[:3], bad, REFERENCES, seed=0)


def test_an_interval_bound_just_off_zero_keeps_its_sign_and_value():
    assert interval_text(1.705, 0.044, 3.298) == "+1.71 [+0.04, +3.30]"  # excludes zero, and reads so
    assert interval_text(-0.72, -1.40, -0.001) == "-0.72 [-1.40, -0.00]"  # below zero, however little
    assert PairedDifference(-0.33, -0.74, 0.07, 0.044).text() == "-0.33 [-0.74, +0.07] p=0.044"
