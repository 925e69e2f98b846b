"""The training corpora and their splits, as (source, English reference) pairs.

- "multi30k": German-English image captions (train / val / test_2016_flickr).
- "ru_en": Russian-English from OPUS-MT-testsets, three domains of different
  difficulty, each with a held-out test portion (the files are public test
  sets used here as a small training corpus, so no test pair is trained on):
    * Tatoeba (short everyday sentences): the union of the three releases;
      sentences are split by source, so a source with several translations
      lies wholly on one side. Test: 1,000 sources (their first reference).
    * news: newstest2012-2018, newstest2021 and generaltest2022 train;
      newstest2019 (2,000 pairs) is the test set.
    * TICO-19 (COVID-19 medical text): 500 random pairs test, the rest train.
  val holds 200 further held-out pairs of each domain.

Also `read_de_en_news`: newstest2014 de-en (WMT-14), for evaluating a
Multi30k model out of its domain. It is never trained on.

All random splits are seeded, so every run and every machine sees the same ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from inference.corpora.data_folder import fetch_hint
from training.data.translation import SPLITS, DataError, Pair, read_lines, read_multi30k

OPUS = "opus_mt_testsets"
TATOEBA_RELEASES = ("v2020-07-28", "v2021-03-30", "v2021-08-07")
NEWS_TRAIN_YEARS = tuple(range(2012, 2019))
SPLIT_SEED = 2024
TEST_PER_DOMAIN = {"tatoeba": 1000, "tico19": 500}
VAL_PER_DOMAIN = 200


@dataclass(frozen=True)
class Corpus:
    name: str
    description: str  # what a checkpoint trained on it says in its card
    source_language: str
    test_splits: tuple[str, ...]  # held-out splits scored in metrics.json; the first is the headline
    domains: dict[str, str]  # test split -> domain label, for the memory-content analyses

    def read(self, data_dir: Path) -> dict[str, list[Pair]]:
        return READERS[self.name](Path(data_dir))

    @property
    def headline(self) -> str:
        return self.test_splits[0]


def read_multi30k_splits(data_dir: Path) -> dict[str, list[Pair]]:
    return {split: read_multi30k(data_dir, split) for split in SPLITS}


def read_ru_en(data_dir: Path) -> dict[str, list[Pair]]:
    """{"train", "val", "test_tatoeba", "test_news", "test_tico19"} (module doc)."""
    root = _opus_root(data_dir)
    tatoeba_dir = root / "datasets/helsinki_nlp/tatoeba/testsets/eng-rus"
    tatoeba = _unique(
        pair
        for release in TATOEBA_RELEASES
        for pair in _parallel(
            tatoeba_dir / f"tatoeba-test-{release}.rus.gz", tatoeba_dir / f"tatoeba-test-{release}.eng.gz"
        )
    )
    news_dir = root / "testsets/rus-eng"
    wmt = root / "datasets/statmt"
    news_train = _unique(
        [
            pair
            for year in NEWS_TRAIN_YEARS
            for pair in _parallel(news_dir / f"newstest{year}.rus.gz", news_dir / f"newstest{year}.eng.gz")
        ]
        + _parallel(
            wmt / "wmt21-news-systems/txt/sources/newstest2021.ru-en.src.ru.gz",
            wmt / "wmt21-news-systems/txt/references/newstest2021.ru-en.ref.A.en.gz",
        )
        + _parallel(
            wmt / "wmt22-news-systems/txt/sources/generaltest2022.ru-en.src.ru.gz",
            wmt / "wmt22-news-systems/txt/references/generaltest2022.ru-en.ref.A.en.gz",
        )
    )
    news_test = _unique(_parallel(news_dir / "newstest2019.rus.gz", news_dir / "newstest2019.eng.gz"))
    tico = _unique(
        _parallel(
            root / "datasets/tico19/testsets/en-ru/tico19-test.ru.gz",
            root / "datasets/tico19/testsets/en-ru/tico19-test.en.gz",
        )
    )

    rng = random.Random(SPLIT_SEED)
    tatoeba_test, tatoeba_val, tatoeba_train = _split_by_source(
        tatoeba, TEST_PER_DOMAIN["tatoeba"], VAL_PER_DOMAIN, rng
    )
    rng.shuffle(tico)
    tico_test, tico_val, tico_train = (
        tico[: TEST_PER_DOMAIN["tico19"]],
        tico[TEST_PER_DOMAIN["tico19"] : TEST_PER_DOMAIN["tico19"] + VAL_PER_DOMAIN],
        tico[TEST_PER_DOMAIN["tico19"] + VAL_PER_DOMAIN :],
    )
    rng.shuffle(news_train)
    news_val, news_train = news_train[:VAL_PER_DOMAIN], news_train[VAL_PER_DOMAIN:]

    held_out = {
        source for pairs in (tatoeba_test, tatoeba_val, news_test, news_val, tico_test, tico_val) for source, _ in pairs
    }
    train = [pair for pair in tatoeba_train + news_train + tico_train if pair[0] not in held_out]
    rng.shuffle(train)
    return {
        "train": train,
        "val": tatoeba_val + news_val + tico_val,
        "test_tatoeba": tatoeba_test,
        "test_news": news_test,
        "test_tico19": tico_test,
    }


def read_de_en_news(data_dir: Path) -> list[Pair]:
    """newstest2014 de-en, the WMT-14 test set (3,003 pairs)."""
    folder = _opus_root(data_dir) / "testsets/deu-eng"
    return _parallel(folder / "newstest2014.deu.gz", folder / "newstest2014.eng.gz")


def _opus_root(data_dir: Path) -> Path:
    root = Path(data_dir) / OPUS
    if not root.is_dir():
        raise DataError(f"{root} not found; {fetch_hint(OPUS)}")
    return root


def _parallel(source_path: Path, target_path: Path) -> list[Pair]:
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        raise DataError(
            f"{source_path} has {len(sources)} lines but {target_path} has {len(targets)}; the files must be parallel"
        )
    return [(s, t) for s, t in zip(sources, targets) if s and t]


def _unique(pairs) -> list[Pair]:
    return list(dict.fromkeys(pairs))


def _split_by_source(
    pairs: list[Pair], n_test: int, n_val: int, rng: random.Random
) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(test, val, train): whole source sentences to each side; test and val keep one reference per source."""
    by_source: dict[str, list[str]] = {}
    for source, target in pairs:
        by_source.setdefault(source, []).append(target)
    sources = sorted(by_source)
    rng.shuffle(sources)
    test = [(s, by_source[s][0]) for s in sources[:n_test]]
    val = [(s, by_source[s][0]) for s in sources[n_test : n_test + n_val]]
    train = [(s, t) for s in sources[n_test + n_val :] for t in by_source[s]]
    return test, val, train


READERS = {"multi30k": read_multi30k_splits, "ru_en": read_ru_en}
CORPORA = {
    "multi30k": Corpus(
        "multi30k",
        "Multi30k de-en",
        "German",
        ("test_2016_flickr",),
        {"test_2016_flickr": "Multi30k captions"},
    ),
    "ru_en": Corpus(
        "ru_en",
        "OPUS-MT-testsets ru-en (Tatoeba, WMT news, TICO-19; held-out test portions)",
        "Russian",
        ("test_tatoeba", "test_news", "test_tico19"),
        {"test_tatoeba": "Tatoeba", "test_news": "WMT news", "test_tico19": "TICO-19"},
    ),
}


def corpus_of(model: str, name: str | None) -> Corpus:
    """The corpus a model's record names; ValueError naming the corpora where it names none of them."""
    if name not in CORPORA:
        raise ValueError(f"{model}'s record names no corpus this study reads ({name!r}); known: {', '.join(CORPORA)}")
    return CORPORA[name]
