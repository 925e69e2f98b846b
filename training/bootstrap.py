"""Bootstrap intervals over documents: how much a difference between two
models measured on the same text could move if the text's documents had
been another draw of the same kind."""

from __future__ import annotations

import math

import torch
from sacrebleu.metrics import BLEU

RESAMPLES = 2000
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


def paired_bleu_difference(
    hypotheses_a: list[str], hypotheses_b: list[str], references: list[str], seed: int, resamples: int = RESAMPLES
) -> tuple[float, float, float]:
    """Corpus BLEU of system a minus system b on the same sentences, and its LEVEL percentile interval over
    `resamples` resamplings of the sentences with replacement (paired) -> (difference, low, high). Each
    resample's BLEU is computed from summed per-sentence n-gram statistics, as sacrebleu computes a corpus's."""
    if not len(hypotheses_a) == len(hypotheses_b) == len(references) or not references:
        raise ValueError("both systems need a translation of every reference sentence")
    bleu = BLEU()
    stats_a = torch.tensor(bleu._extract_corpus_statistics(hypotheses_a, [references]), dtype=torch.float64)
    stats_b = torch.tensor(bleu._extract_corpus_statistics(hypotheses_b, [references]), dtype=torch.float64)
    draws = torch.randint(len(references), (resamples, len(references)), generator=torch.Generator().manual_seed(seed))

    def score(stats: torch.Tensor) -> float:  # [10] summed statistics -> BLEU
        return bleu._compute_score_from_stats([int(x) for x in stats.tolist()]).score

    differences = torch.tensor(
        [score(stats_a[d].sum(0)) - score(stats_b[d].sum(0)) for d in draws], dtype=torch.float64
    )
    tail = (1 - LEVEL) / 2
    low, high = torch.quantile(differences, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return score(stats_a.sum(0)) - score(stats_b.sum(0)), low, high
