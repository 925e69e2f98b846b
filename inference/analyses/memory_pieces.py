"""Memory pieces and translation words made comparable: normalised words, the words a memory may hold, categories."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from inference.core.tokenizer import METASPACE, SPECIAL_TOKENS

# Memory-piece categories that are not parts of speech of a word.
SUBWORD, PUNCT, SPACE, SPECIAL = "SUBWORD", "PUNCT", "SPACE", "SPECIAL"
NON_WORD_CATEGORIES = frozenset({SUBWORD, PUNCT, SPACE, SPECIAL})


def _is_punctuation_or_symbol(char: str) -> bool:
    return unicodedata.category(char)[0] in "PS"


def strip_punctuation(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _is_punctuation_or_symbol(text[start]):
        start += 1
    while end > start and _is_punctuation_or_symbol(text[end - 1]):
        end -= 1
    return text[start:end]


def normalise_word(text: str) -> str:
    """The comparable form of a piece or a translation word: "▁Dog," -> "dog"."""
    return strip_punctuation(text.removeprefix(METASPACE).lower())


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
    """Every word a memory may hold (see the matching rules in memory_content's module doc)."""
    return {word for words in piece_candidates(pieces).values() for word in words}


def translation_word_count(translation: str) -> int:
    """Whitespace-separated words that hold a letter or digit (a lone "—" is no word)."""
    return sum(any(c.isalnum() for c in token) for token in translation.split())


def piece_category(piece: str) -> str | None:
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
