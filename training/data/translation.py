"""Multi30k (de-en) as (German, English) pairs, and the padded, length-
bucketed batches the training loop consumes.

The data folder is not part of the project (inference.core.places says where it
is; `memlens data fetch` fills it). The reader of Multi30k is
inference.corpora.multi30k, shared with the app.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from inference.core.decoding import pad_batch
from inference.core.tokenizer import TextTokenizer
from inference.corpora.multi30k import SPLITS, DataError, Pair, read_lines, read_multi30k  # noqa: F401 (re-exported: training reads Multi30k through this module)

Example = tuple[list[int], list[int]]  # (source ids ending in EOS, target ids without special tokens)


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

    def rows(self, positions: Sequence[int]) -> Batch:
        """The batch's rows `positions`, padded as the whole batch is (a model whose computation follows the
        padded length, as an active memory's state does, computes each row as it would in the whole batch)."""
        rows = list(positions)  # a tuple would index dimensions, not rows
        return Batch(self.src_ids[rows], self.tgt_in[rows], self.tgt_out[rows])


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
