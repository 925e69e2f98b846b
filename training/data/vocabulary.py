"""The vocabulary: ONE BPE vocabulary shared by German and English (the
language model's vocabulary is trained on English Wikipedia, training.loop.lm_run).

The model ties its source, target and output embeddings to one matrix, so
both languages must be cut into pieces of the same vocabulary; it is
trained on the German and the English training sentences together.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from inference.core.tokenizer import TextTokenizer, train_bpe
from training.data.translation import Pair

DEFAULT_VOCAB_SIZE = 8000


def train_shared_vocabulary(pairs: list[Pair], vocab_size: int = DEFAULT_VOCAB_SIZE) -> TextTokenizer:
    return train_bpe((sentence for pair in pairs for sentence in pair), vocab_size)


def load_or_train_vocabulary(path: Path, pairs: list[Pair], vocab_size: int = DEFAULT_VOCAB_SIZE) -> TextTokenizer:
    return load_or_train(path, lambda: train_shared_vocabulary(pairs, vocab_size))


def load_or_train(path: Path, train: Callable[[], TextTokenizer]) -> TextTokenizer:
    """The vocabulary saved at `path`, trained by `train` and saved there
    first if absent, so that a resumed run keeps the ids its weights were
    trained with."""
    if path.exists():
        return TextTokenizer.load(path)
    tokenizer = train()
    tokenizer.save(path)
    return tokenizer
