"""Multi30k (de-en) as (German, English) pairs, and the padded, length-
bucketed batches the training loop consumes.

The data folder is not part of the project (training.data_dir says where it
is; `memlens data fetch` fills it). Multi30k lives in its `multi30k/` subfolder as
{split}.{de,en}.gz, one sentence per line, line i of .de <-> line i of .en.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import torch

from inference.core.decoding import pad_batch
from inference.core.tokenizer import TextTokenizer
from training.data_dir import DATA_DIR_ENV, fetch_hint, resolve_data_dir  # noqa: F401 (DATA_DIR_ENV, resolve_data_dir: re-exported for the commands)

SPLITS = ("train", "val", "test_2016_flickr")

Pair = tuple[str, str]  # (German source, English reference)
Example = tuple[list[int], list[int]]  # (source ids ending in EOS, target ids without special tokens)


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
            f"{folder}/{split}.de.gz has {len(german)} lines but {split}.en.gz has {len(english)}; the files must be parallel"
        )
    return list(zip(german, english))


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise DataError(f"{path} is missing; run `memlens data fetch` to download the missing files")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines]


def tokenize_pairs(tokenizer: TextTokenizer, pairs: list[Pair], max_len: int) -> list[Example]:
    """Token ids of each pair, dropping pairs with a side longer than max_len
    (the target counted with the BOS or EOS it gets in a batch)."""
    sources = tokenizer.encode_sources([german for german, _ in pairs])
    targets = tokenizer.encode_batch([english for _, english in pairs])
    return [(s, t) for s, t in zip(sources, targets) if len(s) <= max_len and len(t) + 1 <= max_len]


@dataclass
class Batch:
    src_ids: torch.Tensor  # [b, n] source tokens, pad after
    tgt_in: torch.Tensor  # [b, t] BOS + target: the decoder's input
    tgt_out: torch.Tensor  # [b, t] target + EOS: what each decoder position predicts

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.src_ids.to(device), self.tgt_in.to(device), self.tgt_out.to(device))

    def n_targets(self, pad_id: int) -> int:
        return int((self.tgt_out != pad_id).sum())


def make_batch(examples: list[Example], tokenizer: TextTokenizer) -> Batch:
    return Batch(
        src_ids=pad_batch([source for source, _ in examples], tokenizer.pad_id),
        tgt_in=pad_batch([[tokenizer.bos_id] + target for _, target in examples], tokenizer.pad_id),
        tgt_out=pad_batch([target + [tokenizer.eos_id] for _, target in examples], tokenizer.pad_id),
    )


def bucketed_batches(examples: list[Example], batch_size: int, seed: int, chunk_batches: int = 100) -> list[list[int]]:
    """Batches of example indices, the same for the same seed.

    Examples are shuffled, then sorted by length within chunks of
    `chunk_batches` batches, so that a batch holds sentences of similar
    length (little padding) while batches still differ from epoch to epoch;
    finally the order of the batches is shuffled.
    """
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(examples), generator=generator).tolist()
    chunk = batch_size * chunk_batches
    batches = []
    for start in range(0, len(order), chunk):
        by_length = sorted(order[start : start + chunk], key=lambda i: (len(examples[i][0]), len(examples[i][1])))
        batches += [by_length[i : i + batch_size] for i in range(0, len(by_length), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
