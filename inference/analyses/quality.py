"""Translation quality of a corpus: sacrebleu BLEU, chrF and the length ratio on detokenized text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF


@dataclass
class Quality:
    bleu: float
    chrf: float
    length_ratio: float  # output length / reference length, in BLEU's tokens (BLEU's brevity penalty reads it)
    sentences: int


def corpus_quality(hypotheses: Sequence[str], references: Sequence[str]) -> Quality:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    refs = [list(references)]
    bleu = BLEU().corpus_score(list(hypotheses), refs)
    return Quality(
        bleu.score, CHRF().corpus_score(list(hypotheses), refs).score, bleu.sys_len / bleu.ref_len, len(hypotheses)
    )


RIGHT_CHRF = 60.0  # a sentence's chrF from which its translation reads as right (an opening example's bar)


def sentence_chrf(hypothesis: str, reference: str) -> float:
    """sacrebleu's chrF of one sentence against its one reference, 0 to 100."""
    return CHRF().sentence_score(hypothesis, [reference]).score


def signatures() -> dict[str, str]:
    """sacrebleu's signatures of the BLEU and chrF that corpus_quality computes: what a reader needs to
    compare our figures with anyone else's (one reference per sentence, as every corpus here has)."""
    metrics = {"bleu": BLEU(), "chrf": CHRF()}
    for metric in metrics.values():
        metric.corpus_score(["one"], [["one"]])  # a signature names the number of references, known once scored
    return {name: str(metric.get_signature()) for name, metric in metrics.items()}
