from __future__ import annotations

from pathlib import Path

import pytest

from inference.core.places import resolve_data_dir
from training.data.translation import DataError, bucketed_batches, make_batch, read_multi30k, tokenize_pairs
from training.data.vocabulary import train_shared_vocabulary


def test_data_dir_setting_order(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "env"))
    assert resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_data_dir() == tmp_path / "env"
    monkeypatch.delenv("MEMLENS_DATA_DIR")
    assert resolve_data_dir().parts[-2:] == ("shared", "data")


def test_missing_folder_says_how_to_fetch_it(tmp_path: Path):
    with pytest.raises(DataError, match=r"multi30k not found; run `memlens data fetch multi30k`"):
        read_multi30k(tmp_path, "train")


def test_missing_file_is_named(tmp_path: Path):
    (tmp_path / "multi30k").mkdir()
    with pytest.raises(DataError, match=r"val\.de\.gz is missing"):
        read_multi30k(tmp_path, "val")


def test_reads_parallel_pairs(synthetic_data_dir: Path):
    pairs = read_multi30k(synthetic_data_dir, "train")
    assert len(pairs) == 256
    german, english = pairs[0]
    assert len(german.split()) == len(english.split())


@pytest.fixture(scope="module")
def tokenized(synthetic_data_dir):
    pairs = read_multi30k(synthetic_data_dir, "train")
    tokenizer = train_shared_vocabulary(pairs, 60)
    return tokenizer, tokenize_pairs(tokenizer, pairs, max_len=20)


def test_long_pairs_are_dropped(synthetic_data_dir, tokenized):
    tokenizer, _ = tokenized
    pairs = read_multi30k(synthetic_data_dir, "train")
    kept = tokenize_pairs(tokenizer, pairs, max_len=6)
    assert 0 < len(kept) < len(pairs)
    assert all(len(source) <= 6 and len(target) + 1 <= 6 for source, target in kept)


def test_batches_cover_every_example_once_and_repeat_with_the_seed(tokenized):
    _, examples = tokenized
    batches = bucketed_batches(examples, batch_size=16, seed=3, chunk_batches=4)
    assert sorted(i for batch in batches for i in batch) == list(range(len(examples)))
    assert all(len(batch) <= 16 for batch in batches)
    assert batches == bucketed_batches(examples, batch_size=16, seed=3, chunk_batches=4)
    assert batches != bucketed_batches(examples, batch_size=16, seed=4, chunk_batches=4)


def test_batches_group_similar_lengths(tokenized):
    """Within a chunk a batch spans a narrow range of source lengths."""
    _, examples = tokenized
    spread = [
        max(len(examples[i][0]) for i in b) - min(len(examples[i][0]) for i in b)
        for b in bucketed_batches(examples, 16, seed=0)
    ]
    unsorted_spread = [
        max(len(e[0]) for e in examples[i : i + 16]) - min(len(e[0]) for e in examples[i : i + 16])
        for i in range(0, len(examples), 16)
    ]
    assert sum(spread) < sum(unsorted_spread) / 2


def test_batch_tensors_shift_the_target_by_one(tokenized):
    tokenizer, examples = tokenized
    batch = make_batch(examples[:3], tokenizer)
    assert batch.src_ids.shape == (3, max(len(s) for s, _ in examples[:3]))
    assert batch.tgt_in.shape == batch.tgt_out.shape == (3, max(len(t) for _, t in examples[:3]) + 1)
    for row, (source, target) in enumerate(examples[:3]):
        assert batch.src_ids[row, : len(source)].tolist() == source
        assert batch.tgt_in[row, : len(target) + 1].tolist() == [tokenizer.bos_id] + target
        assert batch.tgt_out[row, : len(target) + 1].tolist() == target + [tokenizer.eos_id]
        assert (batch.tgt_out[row, len(target) + 1 :] == tokenizer.pad_id).all()
