"""What the working-memory decoder (paper 004, section 5) writes to memory.

Inputs are per-sentence records: the model's detokenized translation and its
memory tokens as vocabulary pieces ("▁dog", "s", "."). The analyses follow the
paper's memory-content study:

- unique memory tokens per sentence (paper Fig. 2, 3);
- memory diversity against translation length (Fig. 5);
- translation keywords found in memory (Fig. 4a; YAKE here, RAKE in the paper);
- translation content words found in memory (Fig. 4b);
- parts of speech of memory tokens (Fig. 6).

Keyword and content-word rates come with a chance baseline: each memory paired
with the next sentence's translation (rotation by one), so a reader sees
whether memory is about *its own* sentence rather than about frequent words.

Matching rules. A memory piece is normalised to a word by dropping the "▁"
marker, lowercasing and stripping punctuation/symbols at both ends; empty
results and special tokens ("<unk>") are no words. Memory is sampled one piece
at a time, so every piece is a candidate word; a word-initial piece followed
by word-internal pieces also stands for their join (["▁dog", "s"] -> "dogs").
Translation words (YAKE keywords, spaCy tokens) are normalised the same way
and are in memory when they equal one of these candidates.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np

from inference.analyses.memory_pieces import (
    NON_WORD_CATEGORIES,
    PUNCT,
    SUBWORD,
    piece_candidates,
    piece_category,
    strip_punctuation,
    translation_word_count,
)
from inference.analyses.translation_tags import TaggedTranslation, tag_alone, tag_translations, translation_keywords
from inference.core.tokenizer import METASPACE

DEFAULT_LENGTH_EDGES = (0, 5, 10, 15, 20, 30, 50, math.inf)  # translation words; bucket i is [edges[i], edges[i+1])


@dataclass(frozen=True)
class MemoryRecord:
    translation: str  # the model's detokenized English translation
    memory_pieces: list[str]  # the memory tokens in writing order, as vocabulary pieces, e.g. ["▁dog", "s", "▁park"]


# ---------------------------------------------------------------- results


@dataclass
class UniqueTokenHistogram:
    n_sentences: int
    sentences_by_unique_count: list[int]  # [k] sentences with exactly k unique memory pieces, k = 0 .. max
    mean_unique: float  # unique memory pieces per sentence
    median_unique: float
    mean_memory_length: float  # memory pieces per sentence, repeats included


@dataclass
class LengthBucket:
    label: str  # "5–9", "50+"
    min_words: int  # inclusive
    max_words: int | None  # inclusive; None for the open last bucket
    n_sentences: int
    mean_memory_length: float | None  # None for an empty bucket
    mean_unique: float | None
    mean_diversity: float | None  # unique pieces / memory length; 0 for an empty memory


@dataclass
class DiversityByLength:
    buckets: list[LengthBucket]
    pearson_length_unique: float | None  # over all sentences; None when either variable is constant
    spearman_length_unique: float | None


@dataclass
class MatchRates:
    """How often words of a translation are found in a memory."""

    n_sentences: int  # sentences with at least one word to look for; the others carry no evidence
    n_pairs: int  # (sentence, word) pairs, each word once per sentence
    p_in_memory: float | None  # over all pairs
    mean_sentence_p: float | None  # per-sentence share, averaged over sentences
    share_sentences_with_any: float | None  # sentences with at least one word in memory (the paper's Fig. 4 measure)


@dataclass
class KeywordsInMemory:
    top: int  # YAKE keywords per translation (single words); short translations may yield fewer
    matched: MatchRates  # each memory against its own translation
    rotated_baseline: MatchRates | None  # memory i against translation i+1; None for a single sentence


@dataclass
class ContentWordsInMemory:
    matched: MatchRates
    rotated_baseline: MatchRates | None
    n_memory_words: int  # unique word-bearing memory pieces per sentence, summed
    share_memory_words_own_content: float | None  # of those, the share that are content words of their own translation


@dataclass
class MemoryPosDistribution:
    """Categories of memory pieces, each piece counted once per sentence (the
    paper counts unique memory tokens). Word pieces carry a UPOS tag; the rest
    are SUBWORD (no "▁"), PUNCT, SPACE (a bare "▁") or SPECIAL ("<unk>")."""

    n_pieces: int
    counts: dict[str, int]  # category -> pieces, most frequent first
    fractions: dict[str, float]  # category -> share of n_pieces; sums to 1
    subword_share: float
    punctuation_share: float
    tagged_in_context_share: float | None  # word pieces tagged inside their translation (the rest were tagged alone)


# ---------------------------------------------------------------- the corpus


class _Corpus:
    """Records with what the analyses share, each computed once on first use."""

    def __init__(self, records: Sequence[MemoryRecord]):
        if not records:
            raise ValueError("no records")
        self.records = list(records)

    @cached_property
    def candidates(self) -> list[dict[str, list[str]]]:
        return [piece_candidates(r.memory_pieces) for r in self.records]

    @cached_property
    def memory_words(self) -> list[set[str]]:
        return [{word for words in candidates.values() for word in words} for candidates in self.candidates]

    @cached_property
    def tagged(self) -> list[TaggedTranslation]:
        return tag_translations([r.translation for r in self.records])

    @cached_property
    def unique_counts(self) -> np.ndarray:  # [n] unique memory pieces per sentence
        return np.array([len(set(r.memory_pieces)) for r in self.records])

    @cached_property
    def memory_lengths(self) -> np.ndarray:  # [n] memory pieces per sentence
        return np.array([len(r.memory_pieces) for r in self.records])

    def keywords(self, top: int) -> list[list[str]]:
        return [translation_keywords(r.translation, top) for r in self.records]


# ---------------------------------------------------------------- unique tokens and diversity


def _unique_token_histogram(corpus: _Corpus) -> UniqueTokenHistogram:
    unique = corpus.unique_counts
    return UniqueTokenHistogram(
        n_sentences=len(unique),
        sentences_by_unique_count=np.bincount(unique).tolist(),
        mean_unique=float(unique.mean()),
        median_unique=float(np.median(unique)),
        mean_memory_length=float(corpus.memory_lengths.mean()),
    )


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """0-based ranks; tied values share the mean of their positions."""
    order = np.argsort(values, kind="stable")
    _, first, counts = np.unique(values[order], return_index=True, return_counts=True)
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(first + (counts - 1) / 2, counts)
    return ranks


def _pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    dx, dy = x - x.mean(), y - y.mean()
    scale = math.sqrt(float((dx * dx).sum() * (dy * dy).sum()))
    return float((dx * dy).sum()) / scale if scale > 0 else None


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    return _pearson(_average_ranks(x), _average_ranks(y))


def _bucket_label(low: float, high: float) -> str:
    return f"{int(low)}+" if math.isinf(high) else f"{int(low)}–{int(high) - 1}"


def _mean_or_none(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


def _diversity_by_length(corpus: _Corpus, edges: Sequence[float]) -> DiversityByLength:
    lengths = np.array([translation_word_count(r.translation) for r in corpus.records], dtype=float)
    unique, memory = corpus.unique_counts, corpus.memory_lengths
    diversity = np.divide(unique, memory, out=np.zeros(len(memory)), where=memory > 0)
    buckets = []
    for low, high in zip(edges[:-1], edges[1:]):
        inside = (lengths >= low) & (lengths < high)
        buckets.append(
            LengthBucket(
                label=_bucket_label(low, high),
                min_words=int(low),
                max_words=None if math.isinf(high) else int(high) - 1,
                n_sentences=int(inside.sum()),
                mean_memory_length=_mean_or_none(memory[inside]),
                mean_unique=_mean_or_none(unique[inside]),
                mean_diversity=_mean_or_none(diversity[inside]),
            )
        )
    unique_f = unique.astype(float)
    return DiversityByLength(buckets, _pearson(lengths, unique_f), _spearman(lengths, unique_f))


# ---------------------------------------------------------------- translation words in memory


def _match_rates(wanted: Sequence[Sequence[str]], memories: Sequence[set[str]]) -> MatchRates:
    per_sentence = [[word in memory for word in words] for words, memory in zip(wanted, memories) if words]
    if not per_sentence:
        return MatchRates(0, 0, None, None, None)
    n_pairs = sum(len(found) for found in per_sentence)
    return MatchRates(
        n_sentences=len(per_sentence),
        n_pairs=n_pairs,
        p_in_memory=sum(map(sum, per_sentence)) / n_pairs,
        mean_sentence_p=float(np.mean([sum(found) / len(found) for found in per_sentence])),
        share_sentences_with_any=float(np.mean([any(found) for found in per_sentence])),
    )


def _rotated_match_rates(wanted: Sequence[Sequence[str]], memories: Sequence[set[str]]) -> MatchRates | None:
    """Memory i against the words of translation i+1: the rate expected from
    memory that is unrelated to its sentence but drawn from the same corpus."""
    if len(wanted) < 2:
        return None
    return _match_rates(list(wanted[1:]) + [wanted[0]], memories)


def _keyword_in_memory(corpus: _Corpus, top: int) -> KeywordsInMemory:
    keywords = corpus.keywords(top)
    return KeywordsInMemory(
        top, _match_rates(keywords, corpus.memory_words), _rotated_match_rates(keywords, corpus.memory_words)
    )


def _content_words_in_memory(corpus: _Corpus) -> ContentWordsInMemory:
    content = [sorted(t.content_words) for t in corpus.tagged]
    own_content = [
        any(word in tagged.content_words for word in words)
        for candidates, tagged in zip(corpus.candidates, corpus.tagged)
        for words in candidates.values()
    ]
    return ContentWordsInMemory(
        matched=_match_rates(content, corpus.memory_words),
        rotated_baseline=_rotated_match_rates(content, corpus.memory_words),
        n_memory_words=len(own_content),
        share_memory_words_own_content=float(np.mean(own_content)) if own_content else None,
    )


# ---------------------------------------------------------------- parts of speech


def _pos_in_context(words: list[str], tagged: TaggedTranslation) -> str | None:
    return next((tagged.pos_by_word[word] for word in words if word in tagged.pos_by_word), None)


def _memory_pos_distribution(corpus: _Corpus) -> MemoryPosDistribution:
    categories: list[str] = []
    alone: list[str] = []  # surface forms of word pieces absent from their translation, tagged without context below
    for record, candidates, tagged in zip(corpus.records, corpus.candidates, corpus.tagged):
        for piece in dict.fromkeys(record.memory_pieces):
            category = piece_category(piece)
            if category is None:
                category = _pos_in_context(candidates[piece], tagged)
            if category is None:
                # Keep the case: "Paris" alone is a proper noun, "paris" may not be.
                alone.append(strip_punctuation(piece.removeprefix(METASPACE)))
            else:
                categories.append(category)
    n_word_pieces = len(alone) + sum(category not in NON_WORD_CATEGORIES for category in categories)
    pos_alone = tag_alone(set(alone))
    counts = Counter(categories) + Counter(pos_alone[word] for word in alone)
    n_pieces = sum(counts.values())  # > 0 unless every memory is empty
    return MemoryPosDistribution(
        n_pieces=n_pieces,
        counts=dict(counts.most_common()),
        fractions={category: count / n_pieces for category, count in counts.most_common()},
        subword_share=counts[SUBWORD] / n_pieces if n_pieces else 0.0,
        punctuation_share=counts[PUNCT] / n_pieces if n_pieces else 0.0,
        tagged_in_context_share=1 - len(alone) / n_word_pieces if n_word_pieces else None,
    )


# ---------------------------------------------------------------- public entry points


def unique_token_histogram(records: Sequence[MemoryRecord]) -> UniqueTokenHistogram:
    return _unique_token_histogram(_Corpus(records))


def diversity_by_length(
    records: Sequence[MemoryRecord], edges: Sequence[float] = DEFAULT_LENGTH_EDGES
) -> DiversityByLength:
    return _diversity_by_length(_Corpus(records), edges)


def keyword_in_memory(records: Sequence[MemoryRecord], top: int = 3) -> KeywordsInMemory:
    return _keyword_in_memory(_Corpus(records), top)


def content_words_in_memory(records: Sequence[MemoryRecord]) -> ContentWordsInMemory:
    return _content_words_in_memory(_Corpus(records))


def memory_pos_distribution(records: Sequence[MemoryRecord]) -> MemoryPosDistribution:
    return _memory_pos_distribution(_Corpus(records))


def memory_content_summary(
    records: Sequence[MemoryRecord], keyword_top: int = 3, length_edges: Sequence[float] = DEFAULT_LENGTH_EDGES
) -> dict:
    """All memory-content analyses of a corpus as one JSON-ready dict; the
    translations are tagged once for all of them."""
    corpus = _Corpus(records)
    return {
        "n_sentences": len(corpus.records),
        "unique_tokens": asdict(_unique_token_histogram(corpus)),
        "diversity_by_length": asdict(_diversity_by_length(corpus, length_edges)),
        "keywords": asdict(_keyword_in_memory(corpus, keyword_top)),
        "content_words": asdict(_content_words_in_memory(corpus)),
        "parts_of_speech": asdict(_memory_pos_distribution(corpus)),
    }
