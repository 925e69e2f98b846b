"""Where the repository keeps things and where a model runs, for the app and training alike: the
repository root, the shipped checkpoints, the run folders, the data folder (`--data-dir`, else
$MEMLENS_DATA_DIR, else ../shared/data next to the repository; `memlens data fetch` fills it) and the
device. Imports nothing heavy at module level, so the fetch command starts without torch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS_DIR = REPO_ROOT / "checkpoints"
RUNS_DIR = REPO_ROOT / "runs"  # resumable run folders and logs, git-ignored
DOCS_DIR = REPO_ROOT / "docs"
MEMORY_EXAMPLES_FILE = REPO_ROOT / "app" / "data" / "memory_examples.json"  # measured by training.studies
OPENING_EXAMPLES_FILE = REPO_ROOT / "app" / "data" / "opening_examples.json"  # each model's opening input
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
DATA_DIR_ENV = "MEMLENS_DATA_DIR"


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The data folder: the argument, else $MEMLENS_DATA_DIR, else ../shared/data."""
    return Path(data_dir or os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


def select_device(setting: str | None = None) -> torch.device:
    """ "auto" (default; also env MEMLENS_DEVICE) picks CUDA when present, else CPU."""
    import torch

    setting = setting or os.environ.get("MEMLENS_DEVICE") or "auto"
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(setting)
