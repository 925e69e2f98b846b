"""A least-recently-used cache bounded by bytes, not entries: what it holds
stays within its budget however large each entry is. Thread-safe; the
caller says how large a value is."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import numpy as np
import torch

V = TypeVar("V")


class ByteBudgetCache(Generic[V]):
    def __init__(self, budget: int, size_of: Callable[[V], int]):
        self.budget = budget
        self.size_of = size_of
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()  # oldest first
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: Hashable, value: V) -> None:
        """Keep `value`, dropping the least recently used entries while over
        the budget; a value larger than the whole budget is not kept."""
        size = self.size_of(value)
        if size > self.budget:
            return
        with self._lock:
            if key in self._entries:
                self._bytes -= self._entries.pop(key)[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.budget:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[Hashable]:
        """What it holds, the least recently used first."""
        with self._lock:
            return list(self._entries)


def tensor_bytes(*tensors: torch.Tensor | np.ndarray) -> int:
    """Bytes of the given tensors and arrays' data."""
    return sum(t.numel() * t.element_size() if isinstance(t, torch.Tensor) else t.nbytes for t in tensors)
