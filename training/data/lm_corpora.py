"""Text for the language model: English Wikipedia (enwiki) for training and
validation, WikiText-2 and WikiText-103 valid/test for perplexity.

enwiki (`enwiki/text/AA/wiki_*.gz`, WikiExtractor output): `<doc ...>`
blocks whose first line is the article title; the title is dropped (the
body repeats it in its first sentence) and articles with an empty body
(stubs, about 60% of them) are left out. Every body line (a paragraph, or a
section heading such as "Career.") is split into sentences with
`split_sentences`, so sentence boundaries are kept for trigger mining (Geva
et al. mine one prefix per sentence). A seeded 1% of the articles is the
validation split; whole articles go to one side.

WikiText (`wikitext/wikitext-2/{valid,test}.txt.gz`,
`wikitext/wikitext-103/wiki.{valid,test}.tokens.gz`): the same articles,
tokenized by its authors (" , ", "@-@", rare words as `<unk>`, a different
`<unk>` set in each). Our BPE model saw raw text, so `detokenize_wikitext`
undoes that tokenization before scoring (as is usual when an
open-vocabulary model is scored on WikiText); a word count on the original
tokens makes word-level perplexities comparable across tokenizers (see
training.evaluation.perplexity). Articles start at the level-1 headings " = Title = ".
"""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from inference.corpora.data_folder import fetch_hint
from training.data.translation import DataError

ENWIKI = "enwiki"
ENWIKI_DESCRIPTION = "English Wikipedia (~9.1M words, WikiExtractor text of articles created ~2018)"
VAL_FRACTION = 0.01
SPLIT_SEED = 2024
WIKITEXT_FILES = {
    "wikitext2_valid": "wikitext-2/valid.txt.gz",
    "wikitext2_test": "wikitext-2/test.txt.gz",
    "wikitext103_valid": "wikitext-103/wiki.valid.tokens.gz",
    "wikitext103_test": "wikitext-103/wiki.test.tokens.gz",
}
WIKITEXT_UNK = "<unk>"

Document = list[str]  # the sentences of one article, in order


def read_enwiki(data_dir: Path) -> dict[str, list[Document]]:
    """{"train", "val"}: the articles with a body, as sentences (module doc)."""
    files = sorted((Path(data_dir) / "enwiki" / "text").glob("*/wiki_*.gz"))
    if not files:
        raise DataError(f"no enwiki/text/*/wiki_*.gz under {data_dir}; {fetch_hint(ENWIKI)}")
    documents = [sentences for path in files for sentences in _documents(path) if sentences]
    order = list(range(len(documents)))
    random.Random(SPLIT_SEED).shuffle(order)
    val = set(order[: max(1, round(VAL_FRACTION * len(documents)))])
    return {
        "train": [d for i, d in enumerate(documents) if i not in val],
        "val": [d for i, d in enumerate(documents) if i in val],
    }


def _documents(path: Path) -> Iterator[Document]:
    """The sentences of each `<doc>` block of a WikiExtractor file, title dropped."""
    body: list[str] | None = None  # None outside a block
    title_seen = False
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if line.startswith("<doc "):
                body, title_seen = [], False
            elif line == "</doc>":
                if body is not None:
                    yield body
                body = None
            elif line and body is not None:
                if title_seen:
                    body.extend(split_sentences(line))
                title_seen = True


# A sentence ends at . ! or ? (optionally followed by a closing quote or
# bracket) before whitespace and an upper-case letter, digit, quote or
# bracket, unless the word before the full stop is an initial ("J.") or a
# common abbreviation. A heuristic: good enough to give trigger mining one
# prefix per sentence, not a linguistic tokenizer.
_BOUNDARY = re.compile(r"""(?<=[.!?])["')\]]?\s+(?=["'(\[]?[A-Z0-9])""")
_ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr Prof St Jr Sr Rev Gen Col Lt Sgt Capt Cmdr Gov Sen Rep Hon Mt Ft No Nos Vol vs etc al "
    "Inc Ltd Co Corp Bros "
    "Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec approx ca c e.g i.e U.S U.K".split()
)


def split_sentences(paragraph: str) -> list[str]:
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(paragraph):
        words = paragraph[start : match.start()].rsplit(None, 1)
        last_word = words[-1].rstrip(".!?\"')]") if words else ""
        if len(last_word) == 1 and last_word.isupper() or last_word in _ABBREVIATIONS:
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


@dataclass
class WikiTextSplit:
    articles: list[list[str]]  # per article, its non-empty lines, detokenized
    words: int  # WikiText tokens of those lines (its own word count, without line ends), <unk> excluded
    unk_words: int  # <unk> tokens: not scored (training.evaluation.perplexity)


def read_wikitext(data_dir: Path, split: str) -> WikiTextSplit:
    """One of WIKITEXT_FILES, as articles of detokenized lines."""
    if split not in WIKITEXT_FILES:
        raise ValueError(f"unknown WikiText split {split!r}; expected one of {', '.join(WIKITEXT_FILES)}")
    path = Path(data_dir) / "wikitext" / WIKITEXT_FILES[split]
    if not path.is_file():
        raise DataError(f"{path} is missing; {fetch_hint('wikitext')}")
    articles: list[list[str]] = []
    words = unk_words = 0
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            tokens = line.split()
            if not tokens:
                continue
            if _is_article_title(tokens) or not articles:
                articles.append([])
            articles[-1].append(detokenize_wikitext(line))
            unk_words += tokens.count(WIKITEXT_UNK)
            words += len(tokens)
    return WikiTextSplit(articles, words - unk_words, unk_words)


def _is_article_title(tokens: list[str]) -> bool:
    """ " = Title = " (level 1); section headings are " = = Section = = "."""
    return len(tokens) >= 3 and tokens[0] == tokens[-1] == "=" and tokens[1] != "="


_DETOKENIZE = [
    (re.compile(r" @([-,.])@ "), r"\1"),  # 1 @,@ 000 -> 1,000; well @-@ known -> well-known
    (re.compile(r" ([.,;:!?%)\]}])"), r"\1"),  # no space before closing punctuation
    (re.compile(r"([(\[{$]) "), r"\1"),  # nor after opening brackets
    (re.compile(r" (['’](?:s|re|ve|ll|d|m|t)\b|n't\b)"), r"\1"),  # clitics: it 's -> it's
    (re.compile(r'" ([^"]*?) "'), r'"\1"'),  # " quoted " -> "quoted"
]


def detokenize_wikitext(line: str) -> str:
    """WikiText's tokenized line as plain text ("a @-@ b , c" -> "a-b, c");
    `<unk>` is kept: the tokenizer reads it as its UNK token."""
    text = " " + line.strip() + " "
    for pattern, replacement in _DETOKENIZE:
        text = pattern.sub(replacement, text)
    return text.strip()
