"""Where the corpora live: `--data-dir`, else $MEMLENS_DATA_DIR, else
../shared/data next to the repository; `memlens data fetch` fills it
(training.data_fetch). Imports nothing heavy, so the fetch command starts
without torch."""

from __future__ import annotations

import os
from pathlib import Path

from training import REPO_ROOT

DATA_DIR_ENV = "MEMLENS_DATA_DIR"


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The data folder: the argument, else $MEMLENS_DATA_DIR, else ../shared/data."""
    return Path(data_dir or os.environ.get(DATA_DIR_ENV) or REPO_ROOT.parent / "shared" / "data")


def fetch_hint(corpus: str) -> str:
    """How to get a missing corpus, for error messages."""
    return f"run `memlens data fetch {corpus}`, or pass --data-dir or set {DATA_DIR_ENV} to a data folder that holds it"
