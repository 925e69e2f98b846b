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

from training.loop.config import TrainConfig, config_from_dict

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
            "model": {
                "family": "memory_transformer",
                "variant": "memtransformer",
                "d_model": 16,
                "d_ff": 32,
                "n_heads": 2,
                "n_encoder_layers": 1,
                "n_decoder_layers": 1,
                "memory_size": 2,
            },
            "data": {"dataset": "multi30k", "vocab_size": 60, "max_len": 24},
            "train": {"epochs": 3, "batch_size": 16, "warmup_steps": 20, "seed": 0, "save_every_steps": 4, **train},
        }
    )


# A generated stand-in for enwiki (WikiExtractor <doc> blocks) and WikiText,
# for the language model: sentences of a small grammar, so a tiny model's
# loss falls within a few epochs.
NOUNS = ["cat", "dog", "river", "city", "player", "album", "school", "church"]
ADJECTIVES = ["red", "old", "large", "small", "famous"]
VERBS = ["sees", "follows", "joins", "leaves", "describes"]
ENWIKI_ARTICLES = 120  # one in four is an empty stub


def grammar_sentence(rng: random.Random) -> str:
    return f"The {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.choice(VERBS)} the {rng.choice(NOUNS)}."


def write_synthetic_enwiki(root: Path, seed: int = 0) -> Path:
    """root/enwiki/text/AA/wiki_00.gz and wiki_01.gz; returns root."""
    rng = random.Random(seed)
    folder = root / "enwiki" / "text" / "AA"
    folder.mkdir(parents=True)
    for part in range(2):
        blocks = []
        for i in range(ENWIKI_ARTICLES // 2):
            title = f"Article {part}-{i}"
            body = (
                ""
                if i % 4 == 0
                else "\n".join([" ".join(grammar_sentence(rng) for _ in range(3)), "Career.", grammar_sentence(rng)])
                + "\n"
            )
            blocks.append(f'<doc id="{part}{i}" url="?curid={part}{i}" title="{title}">\n{title}\n\n{body}\n</doc>\n')
        with gzip.open(folder / f"wiki_0{part}.gz", "wt", encoding="utf-8") as out:
            out.write("".join(blocks))
    return root


def wikitext_article(rng: random.Random, title: str, unk: str) -> list[str]:
    """Lines in WikiText's tokenized layout."""
    sentence = lambda: grammar_sentence(rng)[:-1] + " ."  # noqa: E731
    return [
        f" = {title} = \n",
        " \n",
        f" {sentence()} {sentence()} \n",
        " \n",
        " = = Career = = \n",
        " \n",
        f" The well @-@ known {unk} , 1 @,@ 000 . \n",
    ]


def write_synthetic_wikitext(root: Path, seed: int = 0) -> Path:
    """root/wikitext/wikitext-2/{valid,test}.txt.gz and wikitext-103/wiki.{valid,test}.tokens.gz; returns root."""
    rng = random.Random(seed)
    files = (
        ("wikitext-2/valid.txt.gz", "<unk>"),
        ("wikitext-2/test.txt.gz", "<unk>"),
        ("wikitext-103/wiki.valid.tokens.gz", "dog"),
        ("wikitext-103/wiki.test.tokens.gz", "cat"),
    )
    for relative, unk in files:
        path = root / "wikitext" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.writelines(line for i in range(3) for line in wikitext_article(rng, f"Title {i}", unk))
    return root


@pytest.fixture(scope="session")
def synthetic_lm_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_synthetic_wikitext(write_synthetic_enwiki(tmp_path_factory.mktemp("lm_data")))


def make_tiny_lm_config(name: str = "tiny_lm_test", **train: object) -> TrainConfig:
    return config_from_dict(
        {
            "name": name,
            "model": {
                "family": "language_model",
                "d_model": 32,
                "d_ff": 64,
                "n_heads": 2,
                "n_layers": 2,
                "max_positions": 16,
            },
            "data": {"dataset": "enwiki", "vocab_size": 80, "max_len": 16},
            "train": {
                "epochs": 3,
                "batch_size": 8,
                "warmup_steps": 20,
                "label_smoothing": 0.0,
                "seed": 0,
                "save_every_steps": 10,
                **train,
            },
        }
    )
