"""Translation quality of a corpus: sacrebleu BLEU and chrF on detokenized text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sacrebleu


@dataclass
class Quality:
    bleu: float
    chrf: float
    sentences: int


def corpus_quality(hypotheses: Sequence[str], references: Sequence[str]) -> Quality:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    refs = [list(references)]
    return Quality(
        sacrebleu.corpus_bleu(list(hypotheses), refs).score,
        sacrebleu.corpus_chrf(list(hypotheses), refs).score,
        len(hypotheses),
    )
