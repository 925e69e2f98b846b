"""A generated stand-in for Multi30k and a tiny config, so training tests run
in seconds without the shared data folder.

The "translation" is word-by-word through a fixed lexicon with the word
order reversed: learnable by a tiny model in a few dozen steps, and not a
plain copy, so the decoder must use the source.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from training.config import TrainConfig, config_from_dict

LEXICON = {
    "hund": "dog", "katze": "cat", "mann": "man", "frau": "woman", "kind": "child", "ball": "ball",
    "rot": "red", "blau": "blue", "groß": "big", "klein": "small", "läuft": "runs", "spielt": "plays",
}  # fmt: skip
SPLIT_SIZES = {"train": 256, "val": 16, "test_2016_flickr": 16}


def write_synthetic_multi30k(root: Path, seed: int = 0) -> Path:
    """root/multi30k/{split}.{de,en}.gz in the Multi30k layout; returns root."""
    rng = random.Random(seed)
    folder = root / "multi30k"
    folder.mkdir(parents=True)
    for split, size in SPLIT_SIZES.items():
        german = [rng.choices(list(LEXICON), k=rng.randint(2, 6)) for _ in range(size)]
        english = [[LEXICON[word] for word in reversed(sentence)] for sentence in german]
        for language, sentences in (("de", german), ("en", english)):
            with gzip.open(folder / f"{split}.{language}.gz", "wt", encoding="utf-8") as out:
                out.writelines(" ".join(words) + "\n" for words in sentences)
    return root


@pytest.fixture(scope="session")
def synthetic_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_multi30k(tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def tiny_config() -> Callable[..., TrainConfig]:
    """Factory: tiny_config(name, **train_overrides) -> TrainConfig."""
    return make_tiny_config


def make_tiny_config(name: str = "tiny_test", **train: object) -> TrainConfig:
    return config_from_dict(
        {
            "name": name,
            "model": {"family": "memtransformer", "d_model": 16, "d_ff": 32, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "memory_size": 2},
            "data": {"dataset": "multi30k", "vocab_size": 60, "max_len": 24},
            "train": {"epochs": 3, "batch_size": 16, "warmup_steps": 20, "seed": 0, "save_every_steps": 4, **train},
        }
    )
