"""Token streams for the language model and the batches it trains on.

A corpus becomes ONE stream: the tokens of each document's sentences in
order, each document followed by EOS (the separator the model learns to
predict and reads as "a new article starts"). The stream keeps every
sentence's span, so trigger mining can take a corpus sentence by sentence
while training reads it as contiguous text.

Training rows are contiguous blocks of `block_len` + 1 tokens (input and
next-token targets), cut across sentence and document boundaries, so no
token is padding. Each epoch starts its blocks at a different offset
(from the seed) and shuffles them, so the same text meets different
contexts; the order of an epoch follows from seed + epoch alone (resume).

A tokenized stream is cached in the run directory (safetensors, no
pickling): the tokenizer there is fixed for the run, and a resumed run then
skips the ~30 s of tokenizing enwiki.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from tqdm import tqdm

from inference.core.tokenizer import TextTokenizer
from training.data.lm_corpora import Document

ENCODE_CHUNK = 20_000  # sentences per encode_batch call: bounds the tokenizer's temporary objects


@dataclass
class TokenStream:
    tokens: torch.Tensor  # [n] int32: each document's tokens, then EOS
    sentence_spans: torch.Tensor  # [s, 2] int64: (start, end) of each sentence in `tokens`, corpus order

    def save(self, path: Path) -> None:
        save_file({"tokens": self.tokens, "sentence_spans": self.sentence_spans}, str(path))

    @classmethod
    def load(cls, path: Path) -> TokenStream:
        stored = load_file(str(path))
        return cls(stored["tokens"], stored["sentence_spans"])

    @property
    def sentences(self) -> int:
        return self.sentence_spans.shape[0]


def tokenize_documents(tokenizer: TextTokenizer, documents: Sequence[Document]) -> TokenStream:
    """The stream of `documents` (module doc), built chunk by chunk in numpy
    so that memory stays near the size of the final int32 array."""
    sentences = [sentence for document in documents for sentence in document]
    last_of_document = np.zeros(len(sentences), dtype=bool)  # [s] the sentence is followed by EOS
    last_of_document[np.cumsum([len(d) for d in documents if d]) - 1] = True
    lengths, pieces = [], []
    with tqdm(desc="tokenizing", total=len(sentences), unit="sentence") as bar:
        for start in range(0, len(sentences), ENCODE_CHUNK):
            ids = tokenizer.encode_batch(sentences[start : start + ENCODE_CHUNK])
            lengths.append(np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)))
            pieces.append(np.fromiter(chain.from_iterable(ids), dtype=np.int32))
            bar.update(len(ids))
    length = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)  # [s]
    flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)  # [sum(length)]
    footprint = length + last_of_document  # [s] tokens each sentence occupies, its EOS included
    starts = np.cumsum(footprint) - footprint  # [s]
    tokens = np.full(int(footprint.sum()), tokenizer.eos_id, dtype=np.int32)
    within = np.arange(flat.size) - np.repeat(
        np.cumsum(length) - length, length
    )  # [sum(length)] index inside its sentence
    tokens[np.repeat(starts, length) + within] = flat
    spans = np.stack([starts, starts + length], axis=1)  # [s, 2]
    return TokenStream(torch.from_numpy(tokens), torch.from_numpy(spans))


def load_or_tokenize(path: Path, tokenizer: TextTokenizer, documents: Sequence[Document]) -> TokenStream:
    if path.exists():
        return TokenStream.load(path)
    stream = tokenize_documents(tokenizer, documents)
    stream.save(path)
    return stream


@dataclass
class LMBatch:
    ids: torch.Tensor  # [b, t] input tokens
    targets: torch.Tensor  # [b, t] the token after each input position

    def to(self, device: torch.device | str) -> LMBatch:
        return LMBatch(self.ids.to(device), self.targets.to(device))

    def n_targets(self, pad_id: int) -> int:
        return int((self.targets != pad_id).sum())

    def rows(self, positions: Sequence[int]) -> LMBatch:
        """The batch's rows `positions`, as long as the whole batch's."""
        rows = list(positions)  # a tuple would index dimensions, not rows
        return LMBatch(self.ids[rows], self.targets[rows])


def block_batches(n_tokens: int, block_len: int, batch_size: int, seed: int) -> list[list[int]]:
    """Batches of block start offsets, the same for the same seed: blocks
    of block_len + 1 tokens from a seeded offset in [0, block_len), shuffled."""
    generator = torch.Generator().manual_seed(seed)
    offset = int(torch.randint(block_len, (1,), generator=generator))
    offsets = torch.arange(offset, n_tokens - block_len, block_len)  # each needs block_len + 1 tokens
    starts: list[int] = offsets[torch.randperm(len(offsets), generator=generator)].tolist()
    return [starts[i : i + batch_size] for i in range(0, len(starts), batch_size)]


def make_lm_batch(tokens: torch.Tensor, starts: Sequence[int], block_len: int) -> LMBatch:
    rows = torch.stack([tokens[s : s + block_len + 1] for s in starts]).long()  # [b, block_len + 1]
    return LMBatch(rows[:, :-1], rows[:, 1:])


@dataclass
class LanguageModelData:
    """The training loop's view of a language-model corpus (see training.loop.epochs.LoopData)."""

    train: TokenStream
    val: TokenStream
    block_len: int

    def epoch_batches(self, batch_size: int, seed: int) -> list[list[int]]:
        return block_batches(len(self.train.tokens), self.block_len, batch_size, seed)

    def train_batch(self, indices: list[int], tokenizer: TextTokenizer) -> LMBatch:
        """indices: block start offsets, from epoch_batches."""
        return make_lm_batch(self.train.tokens, indices, self.block_len)

    def val_batches(self, batch_size: int, tokenizer: TextTokenizer) -> Iterator[LMBatch]:
        """Consecutive blocks of the validation stream, in order."""
        starts = list(range(0, len(self.val.tokens) - self.block_len, self.block_len))
        for i in range(0, len(starts), batch_size):
            yield make_lm_batch(self.val.tokens, starts[i : i + batch_size], self.block_len)

    def validation_bleu(self, model: nn.Module, tokenizer: TextTokenizer) -> None:
        """None: no translations to score (with label smoothing 0 the validation
        loss is the log-perplexity of the validation blocks)."""
        return None


def evaluation_stream(stream: TokenStream, eos_id: int) -> torch.Tensor:  # [n + 1]
    """The stream with an EOS in front, so that the first document, like every
    other, starts after a separator (as in training)."""
    return torch.cat([torch.tensor([eos_id], dtype=stream.tokens.dtype), stream.tokens])
