"""Tokenizers (Hugging Face `tokenizers`, saved as tokenizer.json) with the
display strings the views need: BPE for text, one token per character for
the algorithmic tasks.

BPE splits words SentencePiece-style: a word-initial piece carries the
metaspace marker "▁". For display, word-initial pieces are shown bare and
word-internal pieces with a leading "##", so a reader sees both the pieces
and where words begin. A character vocabulary has no word pieces: its
tokens are shown as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK]  # ids 0..3, in this order
METASPACE = "▁"


class TextTokenizer:
    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        for expected_id, token in enumerate(SPECIAL_TOKENS):
            if tokenizer.token_to_id(token) != expected_id:
                raise ValueError(f"tokenizer must map {token} to id {expected_id}")
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = range(4)
        self.marks_words = any(piece.startswith(METASPACE) for piece in tokenizer.get_vocab())

    @classmethod
    def load(cls, path: str | Path) -> TextTokenizer:
        return cls(Tokenizer.from_file(str(path)))

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
        return self.tokenizer.decode([i for i in ids if i >= len(SPECIAL_TOKENS)])

    def pieces(self, ids: Iterable[int]) -> list[str]:
        """The raw vocabulary piece of each id ("▁Hund", "chen"); "" for an unknown id."""
        return [self.tokenizer.id_to_token(i) or "" for i in ids]

    def display_tokens(self, ids: Iterable[int]) -> list[str]:
        """One readable string per id: "Hund", "##chen", "<eos>"."""
        shown = []
        for i in ids:
            piece = self.tokenizer.id_to_token(i)
            if piece is None:
                shown.append(f"<id {i}>")
            elif i < len(SPECIAL_TOKENS):
                shown.append(piece)
            elif not self.marks_words:
                shown.append(piece)
            elif piece.startswith(METASPACE):
                shown.append(piece[len(METASPACE) :] or METASPACE)
            else:
                shown.append("##" + piece)
        return shown


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
