"""Multi30k (de-en) as (German, English) pairs.

Multi30k lives in the data folder's `multi30k/` subfolder as {split}.{de,en}.gz, one sentence per line,
line i of .de <-> line i of .en.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from inference.corpora.data_folder import fetch_hint

SPLITS = ("train", "val", "test_2016_flickr")

Pair = tuple[str, str]  # (German source, English reference)


class DataError(Exception):
    """Data that cannot be read; the message names the file and where to look."""


def read_multi30k(data_dir: Path, split: str) -> list[Pair]:
    if split not in SPLITS:
        raise ValueError(f"unknown Multi30k split {split!r}; expected one of {', '.join(SPLITS)}")
    folder = Path(data_dir) / "multi30k"
    if not folder.is_dir():
        raise DataError(f"Multi30k folder {folder} not found; {fetch_hint('multi30k')}")
    german = read_lines(folder / f"{split}.de.gz")
    english = read_lines(folder / f"{split}.en.gz")
    if len(german) != len(english):
        raise DataError(
            f"{folder}/{split}.de.gz has {len(german)} lines but {split}.en.gz has {len(english)}; "
            "the files must be parallel"
        )
    return list(zip(german, english))


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"{path} is missing; run `memlens data fetch` to download the missing files")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines]
