"""Paired bootstrap intervals of a perplexity difference over documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sacrebleu
import torch
from sacrebleu.metrics import BLEU

from tests.unit.test_quality import chrf_from_statistics, chrf_statistics
from training.evaluation.bootstrap import (
    LEVEL,
    RESAMPLES,
    TRANSLATION_RESAMPLES,
    PairedDifference,
    interval_text,
    paired_perplexity_difference,
    paired_translation_differences,
    unpaired_mean_difference,
)

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
CLOSE = [f"the dog {i} sits in a park" if i % 2 else reference for i, reference in enumerate(REFERENCES)]


def test_paired_differences_and_p_values_are_sacrebleus(monkeypatch):
    """The same draws, differences and p-values as sacrebleu's own paired bootstrap (PairedTest, 'bs')."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    close = CLOSE
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


# The intervals recomputed here: the same draws, each draw's score by hand, and numpy's percentiles. The results
# tables call them 95% intervals, so the test takes the 2.5th and 97.5th percentiles itself, whatever LEVEL says.
PERCENTILES = [2.5, 97.5]


def test_the_documented_level_and_resample_counts():
    assert (LEVEL, RESAMPLES, TRANSLATION_RESAMPLES) == (0.95, 2000, 1000)


@pytest.mark.parametrize("seed, resamples", [(7, None), (11, 300)])
def test_the_perplexity_interval_is_the_middle_95_percent_of_the_resampled_differences(seed, resamples):
    b = [3.0 * t for t in TOKENS]
    a = [nll + (0.5 if i % 2 else -0.5) * t for i, (nll, t) in enumerate(zip(b, TOKENS))]  # a wide interval
    count = RESAMPLES if resamples is None else resamples
    # Documents drawn with replacement by torch's generator seeded with the seed: [resamples, documents]
    draws = torch.randint(len(TOKENS), (count, len(TOKENS)), generator=torch.Generator().manual_seed(seed)).tolist()
    differences = []
    for draw in draws:  # both models on the same draw: pooled perplexity of a minus that of b
        scored = sum(TOKENS[d] for d in draw)
        differences.append(math.exp(sum(a[d] for d in draw) / scored) - math.exp(sum(b[d] for d in draw) / scored))
    low, high = np.percentile(differences, PERCENTILES)

    extra = {} if resamples is None else {"resamples": resamples}
    difference, got_low, got_high = paired_perplexity_difference(a, b, TOKENS, seed=seed, **extra)

    assert difference == pytest.approx(math.exp(sum(a) / sum(TOKENS)) - math.exp(sum(b) / sum(TOKENS)), rel=1e-12)
    assert got_low == pytest.approx(low, rel=1e-9) and got_high == pytest.approx(high, rel=1e-9)
    assert not np.allclose(np.percentile(differences, [5, 95]), [low, high], rtol=1e-3)  # a 90% one would differ


def bleu_statistics(hypothesis: str, reference: str) -> list[int]:
    """One sentence's matched and total n-grams (orders 1-4) and its two lengths, from sacrebleu's public score."""
    score = sacrebleu.corpus_bleu([hypothesis], [[reference]])
    return [*score.counts, *score.totals, score.sys_len, score.ref_len]


def bleu_from_statistics(statistics) -> float:
    """BLEU of a corpus from its summed statistics: sacrebleu's documented formula (its default exp smoothing)."""
    counts, totals, (sys_len, ref_len) = [[int(n) for n in part] for part in np.split(statistics, [4, 8])]
    return BLEU.compute_bleu(counts, totals, sys_len, ref_len, smooth_method="exp").score


@pytest.mark.parametrize("seed, resamples", [(5, None), (2, 200)])
def test_translation_intervals_are_the_middle_95_percent_of_the_resampled_differences(seed, resamples):
    references, a, b = REFERENCES[:20], GOOD[:20], CLOSE[:20]
    count = TRANSLATION_RESAMPLES if resamples is None else resamples
    # Sentences drawn with replacement as sacrebleu's paired bootstrap draws them: [resamples, sentences]
    draws = np.random.default_rng(seed).choice(len(references), size=(count, len(references)), replace=True)

    extra = {} if resamples is None else {"resamples": resamples}
    got = paired_translation_differences(a, b, references, seed=seed, **extra)

    metrics = {
        "bleu": (bleu_statistics, bleu_from_statistics, sacrebleu.corpus_bleu),
        "chrf": (chrf_statistics, chrf_from_statistics, sacrebleu.corpus_chrf),
    }
    for name, (statistics_of, score_of, corpus_score) in metrics.items():
        whole, resampled = [], []
        for hypotheses in (a, b):
            statistics = np.array([statistics_of(h, r) for h, r in zip(hypotheses, references)])  # [sentences, s]
            whole.append(score_of(statistics.sum(0)))
            assert whole[-1] == pytest.approx(corpus_score(hypotheses, [references]).score, rel=1e-9)
            resampled.append(np.array([score_of(statistics[draw].sum(0)) for draw in draws]))  # [resamples]
        observed, sampled = whole[0] - whole[1], resampled[0] - resampled[1]
        low, high = np.percentile(sampled, PERCENTILES)
        above = np.sum(np.abs(sampled) - np.abs(sampled).mean() > abs(observed))
        assert got[name].difference == pytest.approx(observed, rel=1e-9), name
        assert got[name].low == pytest.approx(low, rel=1e-9), name
        assert got[name].high == pytest.approx(high, rel=1e-9), name
        assert got[name].p_value == pytest.approx((above + 1) / (count + 1), rel=1e-12), name
        assert not np.allclose(np.percentile(sampled, [5, 95]), [low, high], rtol=1e-3), name  # 90% would differ


def test_an_unpaired_interval_of_two_accuracies_is_about_their_normal_interval():
    """30 of 40 right against 10 of 50: the difference 0.55, and its 95% interval close to the normal one,
    0.55 +- 1.96 sqrt(0.75 * 0.25 / 40 + 0.2 * 0.8 / 50)."""
    a, b = [1] * 30 + [0] * 10, [1] * 10 + [0] * 40
    difference, low, high = unpaired_mean_difference(a, b, seed=0)
    half = 1.96 * math.sqrt(0.75 * 0.25 / 40 + 0.2 * 0.8 / 50)
    assert difference == pytest.approx(0.55)
    assert low == pytest.approx(0.55 - half, abs=0.03) and high == pytest.approx(0.55 + half, abs=0.03)
    same_low, same_high = unpaired_mean_difference(a, list(a), seed=0)[1:]
    assert same_low < 0 < same_high
    with pytest.raises(ValueError):
        unpaired_mean_difference([], b, seed=0)
