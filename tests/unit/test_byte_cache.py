"""The byte-budgeted LRU cache behind recent traces, FF studies and loaded models."""

from __future__ import annotations

import torch

from inference.core.byte_cache import ByteBudgetCache, tensor_bytes
from inference.core.checkpoint import CheckpointRegistry, model_bytes, save_checkpoint
from tests.conftest import make_tiny


def test_the_least_recently_used_go_first_and_the_budget_holds():
    cache = ByteBudgetCache(budget=100, size_of=len)
    cache.put("a", "x" * 40)
    cache.put("b", "x" * 40)
    assert cache.get("a") == "x" * 40  # now "b" is the oldest
    cache.put("c", "x" * 40)
    assert cache.get("b") is None and cache.get("a") and cache.get("c") and cache.nbytes == 80
    cache.put("huge", "x" * 101)  # larger than the whole budget: not kept, nothing dropped for it
    assert cache.get("huge") is None and len(cache) == 2
    cache.put("a", "x" * 10)  # replacing an entry counts its new size
    assert cache.nbytes == 50


def test_tensor_bytes_counts_torch_and_numpy_data():
    assert tensor_bytes(torch.zeros(3, 4), torch.zeros(2, dtype=torch.float16), torch.zeros(5).numpy()) == 48 + 4 + 20


def test_the_registry_unloads_the_least_recently_used_model_beyond_its_budget(tiny_tokenizer, tmp_path):
    for family in ("transformer", "memtransformer"):
        loaded = make_tiny(family, tiny_tokenizer)
        save_checkpoint(tmp_path / family, loaded.model, loaded.tokenizer)
    one_model = model_bytes(CheckpointRegistry(tmp_path, "cpu").get("memtransformer"))
    registry = CheckpointRegistry(tmp_path, "cpu", loaded_bytes=int(1.5 * one_model))
    first = registry.get("memtransformer")
    assert registry.get("memtransformer") is first  # kept
    registry.get("transformer")
    assert len(registry._loaded) == 1 and registry.get("memtransformer") is not first  # dropped, loaded again
