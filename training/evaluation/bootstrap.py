"""Bootstrap intervals over documents: how much a difference between two
models measured on the same text could move if the text's documents had
been another draw of the same kind."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sacrebleu.metrics import BLEU, CHRF

RESAMPLES = 2000  # resamplings of documents for a perplexity difference
TRANSLATION_RESAMPLES = 1000  # sacrebleu's default for its paired bootstrap
LEVEL = 0.95


def paired_perplexity_difference(
    nll_a: list[float], nll_b: list[float], tokens: list[int], seed: int, resamples: int = RESAMPLES
) -> tuple[float, float, float]:
    """Token perplexity of model a minus that of model b on the same documents
    (summed NLL per document, the same scored tokens per document), and its
    LEVEL percentile interval over `resamples` resamplings of the documents
    with replacement (paired: both models keep the same draw) -> (difference, low, high)."""
    if not len(nll_a) == len(nll_b) == len(tokens) or not tokens:
        raise ValueError("both models need a total for every document, on the same documents")
    a, b = torch.tensor(nll_a, dtype=torch.float64), torch.tensor(nll_b, dtype=torch.float64)
    counts = torch.tensor(tokens, dtype=torch.float64)  # [documents]
    draws = torch.randint(len(tokens), (resamples, len(tokens)), generator=torch.Generator().manual_seed(seed))
    scored = counts[draws].sum(dim=1)  # [resamples]
    differences = torch.exp(a[draws].sum(dim=1) / scored) - torch.exp(b[draws].sum(dim=1) / scored)
    tail = (1 - LEVEL) / 2
    low, high = torch.quantile(differences, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return math.exp(a.sum() / counts.sum()) - math.exp(b.sum() / counts.sum()), low, high


def paired_mean_difference(
    a: Sequence[float], b: Sequence[float], seed: int, resamples: int = RESAMPLES
) -> tuple[float, float, float]:
    """Mean of a minus mean of b over the same items (a task's test samples), and its LEVEL percentile interval over
    `resamples` paired resamplings of the items with replacement -> (difference, low, high)."""
    if len(a) != len(b) or not len(a):
        raise ValueError("both runs need a score for every item, on the same items")
    differences = torch.tensor(a, dtype=torch.float64) - torch.tensor(b, dtype=torch.float64)  # [items]
    draws = torch.randint(len(a), (resamples, len(a)), generator=torch.Generator().manual_seed(seed))
    means = differences[draws].mean(dim=1)  # [resamples]
    tail = (1 - LEVEL) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return float(differences.mean()), low, high


def unpaired_mean_difference(
    a: Sequence[float], b: Sequence[float], seed: int, resamples: int = RESAMPLES
) -> tuple[float, float, float]:
    """Mean of a minus mean of b over items of their own (test samples of different lengths), and its LEVEL
    percentile interval over `resamples` resamplings of each side's items with replacement -> (difference, low,
    high)."""
    if not len(a) or not len(b):
        raise ValueError("both sides need at least one item")
    generator = torch.Generator().manual_seed(seed)
    means = []
    for side in (a, b):
        values = torch.tensor(side, dtype=torch.float64)  # [items]
        means.append(values[torch.randint(len(side), (resamples, len(side)), generator=generator)].mean(dim=1))
    tail = (1 - LEVEL) / 2
    low, high = torch.quantile(means[0] - means[1], torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return sum(a) / len(a) - sum(b) / len(b), low, high


def sample_char_accuracy(test: dict) -> list[float] | None:
    """A task run's per-sample character accuracy, from its test record's hits per sample (every sample of a task
    has as many target characters: the record's accuracy gives how many); None where the run kept no per-sample
    record."""
    hits = test.get("sample_char_hits")
    if not hits:
        return None
    targets = round(sum(hits) / (test["char_accuracy"] * len(hits)))  # target characters per sample
    return [h / targets for h in hits]


@dataclass(frozen=True)
class PairedDifference:
    """One metric's corpus score of system a minus system b on the same sentences, with the LEVEL percentile
    interval of the resampled differences and the paired bootstrap p-value as sacrebleu computes it (the
    resampled |a - b| centred on their mean, against the observed |a - b|; (count above + 1) / (resamples + 1))."""

    difference: float
    low: float
    high: float
    p_value: float

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def text(self) -> str:
        """'+d [low, high] p=…' as the results tables print it."""
        return f"{interval_text(self.difference, self.low, self.high)} p={self.p_value:.3f}"


def interval_text(difference: float, low: float, high: float) -> str:
    """'+d [low, high]': two decimals with the sign kept, so that a bound just off zero reads +0.04 or -0.00,
    never a bare 0 (one decimal printed a WT-103 bound of +0.044 as +0.0)."""
    return f"{difference:+.2f} [{low:+.2f}, {high:+.2f}]"


def paired_translation_differences(
    hypotheses_a: Sequence[str],
    hypotheses_b: Sequence[str],
    references: Sequence[str],
    seed: int,
    resamples: int = TRANSLATION_RESAMPLES,
) -> dict[str, PairedDifference]:
    """{"bleu": .., "chrf": ..}: sacrebleu's paired bootstrap of system a against system b, both metrics on the
    same draws of the sentences (numpy's generator seeded with `seed`, drawn as sacrebleu draws them). Each
    resample's score is computed from its summed per-sentence statistics, as sacrebleu computes a corpus's."""
    if not len(hypotheses_a) == len(hypotheses_b) == len(references) or not references:
        raise ValueError("both systems need a translation of every reference sentence")
    draws = np.random.default_rng(seed).choice(len(references), size=(resamples, len(references)), replace=True)
    differences = {}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF())):
        scores = []
        for hypotheses in (hypotheses_a, hypotheses_b):
            stats = np.array(metric._extract_corpus_statistics(list(hypotheses), [list(references)]))  # [n, s]
            whole = metric._compute_score_from_stats(list(stats.sum(0))).score
            resampled = np.array([metric._compute_score_from_stats(list(stats[d].sum(0))).score for d in draws])
            scores.append((whole, resampled))  # resampled: [resamples]
        (whole_a, resampled_a), (whole_b, resampled_b) = scores
        sampled = resampled_a - resampled_b  # [resamples]
        spread = np.abs(sampled) - np.abs(sampled).mean()
        tail = (1 - LEVEL) / 2
        low, high = np.quantile(sampled, [tail, 1 - tail])
        differences[name] = PairedDifference(
            float(whole_a - whole_b),
            float(low),
            float(high),
            float((np.sum(spread > abs(whole_a - whole_b)) + 1) / (resamples + 1)),
        )
    return differences
