"""Where the corpora live: `--data-dir`, else $MEMLENS_DATA_DIR, else
../shared/data next to the repository; `memlens data fetch` fills it
(training.data_fetch). Imports nothing heavy, so the fetch command starts
without torch."""

from __future__ import annotations

import os
from pathlib import Path

from inference.corpora.data_folder import DATA_DIR_ENV
from training import REPO_ROOT


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The data folder: the argument, else $MEMLENS_DATA_DIR, else ../shared/data."""
    return Path(data_dir or os.environ.get(DATA_DIR_ENV) or REPO_ROOT.parent / "shared" / "data")
