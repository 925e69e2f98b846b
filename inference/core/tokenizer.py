"""Tokenizers (Hugging Face `tokenizers`, saved as tokenizer.json) with the
display strings the views need: BPE for text, one token per character for
the algorithmic tasks.

BPE splits words SentencePiece-style: a word-initial piece carries the
metaspace marker "▁" (a byte-level BPE, GPT-2's, marks it "Ġ"). For display,
word-initial pieces are shown bare and word-internal pieces with a leading
"##", so a reader sees both the pieces and where words begin. A byte-level
BPE's pieces are written in its byte alphabet ("Ċ" is a newline, "âĢĵ" the
three bytes of "–"): they are shown as the text their bytes spell, a line
break as "↵", and bytes that end inside a character as escapes ("\xe2").
A character vocabulary has no word pieces: its tokens are shown as they are.

MemLens's own tokenizers put the four special tokens at ids 0 to 3; a model
trained elsewhere names its own (`SpecialIds`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK]  # ids 0..3, in this order
MEMLENS_SPECIAL_IDS = (0, 1, 2)  # pad, bos, eos of MemLens's own layout
METASPACE = "▁"
WORD_MARKERS = (METASPACE, "Ġ")  # SentencePiece-style and byte-level BPE
SHOWN_WHITESPACE = {"\n": "↵", "\r": "␍", "\t": "⇥"}  # what a decoded piece shows in place of these (a space alone: ␣)


def byte_alphabet() -> dict[str, int]:
    """A byte-level BPE's alphabet (GPT-2's): each of the 256 byte values as one printable character. The bytes
    that print as themselves in Latin-1 keep their character; the others (controls, space, 0x7f-0xa0, 0xad)
    take the characters from U+0100 on, in byte order ("Ġ" is the space, "Ċ" the newline)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    alphabet = {chr(b): b for b in printable}
    shifted = (b for b in range(256) if b not in alphabet.values())
    alphabet.update({chr(0x100 + n): b for n, b in enumerate(shifted)})
    return alphabet


BYTE_ALPHABET = byte_alphabet()


@dataclass(frozen=True)
class SpecialIds:
    """The special tokens' ids of a tokenizer trained elsewhere (one id may serve several: GPT-2's end of text is
    its BOS, EOS and padding); unk None where unknown text falls back to bytes instead."""

    pad: int
    bos: int
    eos: int
    unk: int | None


class TextTokenizer:
    def __init__(self, tokenizer: Tokenizer, special: SpecialIds | None = None):
        """`special`: the ids of a tokenizer trained elsewhere; None: MemLens's own layout (ids 0 to 3), checked."""
        self.tokenizer = tokenizer
        if special is None:
            for expected_id, token in enumerate(SPECIAL_TOKENS):
                if tokenizer.token_to_id(token) != expected_id:
                    raise ValueError(f"tokenizer must map {token} to id {expected_id}")
            special = SpecialIds(*range(4))
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = special.pad, special.bos, special.eos, special.unk
        self.special_ids = frozenset({special.pad, special.bos, special.eos} | ({special.unk} - {None}))
        vocab = tokenizer.get_vocab()
        self.word_marker = next((m for m in WORD_MARKERS if any(piece.startswith(m) for piece in vocab)), None)
        self.byte_level = isinstance(tokenizer.decoder, decoders.ByteLevel)
        # shown by their name: the special ids, and tokens added whole to the vocabulary ("<|im_start|>")
        self.named_ids = self.special_ids | frozenset(tokenizer.get_added_tokens_decoder())

    @classmethod
    def load(cls, path: str | Path, special: tuple[int, int, int] | None = None) -> TextTokenizer:
        """`special`: (pad, bos, eos) ids of a tokenizer trained elsewhere (its unknown token its own); None:
        MemLens's own layout."""
        tokenizer = Tokenizer.from_file(str(path))
        if special is None or special == MEMLENS_SPECIAL_IDS:
            return cls(tokenizer)
        return cls(tokenizer, SpecialIds(*special, unknown_id(tokenizer)))

    def save(self, path: str | Path) -> None:
        self.tokenizer.save(str(path))

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        """Token ids of a text, without special tokens."""
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def encode_sources(self, texts: list[str]) -> list[list[int]]:
        """Encoder input ids: the tokens, then EOS. Training and inference
        both encode sources here, so the model always sees the same input."""
        return [ids + [self.eos_id] for ids in self.encode_batch(texts)]

    def decode(self, ids: Iterable[int]) -> str:
        """Detokenized text; special tokens are dropped."""
        return self.tokenizer.decode([i for i in ids if i not in self.special_ids])

    def pieces(self, ids: Iterable[int]) -> list[str]:
        """The raw vocabulary piece of each id ("▁Hund", "chen"); "" for an unknown id."""
        return [self.tokenizer.id_to_token(i) or "" for i in ids]

    def display_tokens(self, ids: Iterable[int]) -> list[str]:
        """One readable string per id: "Hund", "##chen", "<eos>" (a byte-level piece as the text it spells:
        "ĠParis" -> "Paris", "Ċ" -> "##↵")."""
        shown = []
        for i in ids:
            piece = self.tokenizer.id_to_token(i)
            if piece is None:
                shown.append(f"<id {i}>")
            elif i in self.named_ids:
                shown.append(piece)
            elif self.byte_level:
                shown.append(byte_piece_text(piece))
            elif self.word_marker is None:
                shown.append(piece)
            elif piece.startswith(self.word_marker):
                shown.append(piece[len(self.word_marker) :] or self.word_marker)
            else:
                shown.append("##" + piece)
        return shown


def byte_piece_text(piece: str) -> str:
    """A byte-level BPE piece as a reader reads it: the UTF-8 text of its bytes, bare where it opens a word (a
    leading space) and after "##" inside one; line breaks and tabs as SHOWN_WHITESPACE, and a piece of whitespace
    alone with each space as "␣"; bytes that stop inside a character as escapes. A piece outside the byte
    alphabet is shown as it is."""
    if any(character not in BYTE_ALPHABET for character in piece):
        return piece
    text = bytes(BYTE_ALPHABET[character] for character in piece).decode("utf-8", errors="backslashreplace")
    if text.isspace():  # spaces and line breaks alone: each shown
        return "".join(SHOWN_WHITESPACE.get(character, "␣") for character in text)
    for blank, shown in SHOWN_WHITESPACE.items():
        text = text.replace(blank, shown)
    return text[1:] if text.startswith(" ") else "##" + text


def train_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> TextTokenizer:
    """Train a BPE vocabulary on raw sentences (NFC-normalised, cased)."""
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS, show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return TextTokenizer(tokenizer)


def character_tokenizer(characters: Iterable[str]) -> TextTokenizer:
    """One token per character, after the four special tokens (which a text
    may also name: "12<bos>12"); decoding joins the characters."""
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *characters])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    return TextTokenizer(tokenizer)


def unknown_id(tokenizer: Tokenizer) -> int | None:
    """The id of the tokenizer's unknown token (its model's unk_token, or a Unigram model's unk_id); None where
    it has none (a byte-level BPE needs none)."""
    model = json.loads(tokenizer.to_str()).get("model", {})
    token = model.get("unk_token")
    if isinstance(token, str):
        return tokenizer.token_to_id(token)
    unk_id = model.get("unk_id")
    return unk_id if isinstance(unk_id, int) else None
