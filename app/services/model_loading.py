"""Loading a large model where a reader sees it. The first page open of a model whose weights take long to read
(SmolLM2-135M: 538 MB, about 10 s on 2 cores) starts the load on its own thread and answers at once with a page
that says what is loading and for how long, asking every second until the model is in memory; then the page the
reader asked for opens. Small models (every shipped checkpoint) load within the request as before."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.schemas.validation import InputError
from app.services.gateway import ModelGateway
from inference.core.checkpoint import CheckpointError

WEIGHT_SUFFIXES = (".safetensors", ".gguf")  # the weight files MemLens reads (it never unpickles)


def weight_bytes(folder: Path) -> int:
    """The bytes of the weight files in a model folder (a stat each, nothing read)."""
    return sum(path.stat().st_size for path in folder.iterdir() if path.suffix in WEIGHT_SUFFIXES and path.is_file())


@dataclass
class Load:
    """One model's load on its thread."""

    model: str
    weight_bytes: int
    started: float = field(default_factory=time.monotonic)
    done: bool = False
    error: str | None = None  # why it failed

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


class ModelLoads:
    """The loads a page started, one per model at a time."""

    def __init__(self, gateway: ModelGateway, notice_bytes: int):
        self.gateway = gateway
        self.registry = gateway.registry
        self.notice_bytes = notice_bytes
        self._loads: dict[str, Load] = {}
        self._lock = threading.Lock()

    def slow(self, name: str) -> bool:
        """Whether `name` is a usable model not in memory whose weights are larger than the notice threshold."""
        entry = self.registry.entries.get(name)
        if entry is None or not entry.ok or name in self.registry.loaded():
            return False
        return weight_bytes(entry.path) > self.notice_bytes

    def start(self, name: str) -> Load:
        """The model's load, started on its own thread unless one is running."""
        with self._lock:
            load = self._loads.get(name)
            if load is None or load.error is not None or (load.done and name not in self.registry.loaded()):
                load = Load(name, weight_bytes(self.registry.entries[name].path))
                self._loads[name] = load
                threading.Thread(target=self._load, args=(load,), name=f"load-{name}", daemon=True).start()
            return load

    def of(self, name: str) -> Load | None:
        return self._loads.get(name)

    def _load(self, load: Load) -> None:
        """On this thread, which waits while the model thread loads (as a request's load would: its CPU threads
        are the ones that run the model)."""
        try:
            self.gateway.exclusive(lambda: self.registry.get(load.model))
        except (CheckpointError, InputError, OSError, RuntimeError) as error:
            load.error = str(error)
        load.done = True


class ModelLoading(Exception):  # noqa: N818 (not an error: the page the reader asked for, not ready yet)
    """A page asked for a model that is loading: the reader is shown the load, then the page."""

    def __init__(self, load: Load):
        super().__init__(f"{load.model} is loading")
        self.load = load
