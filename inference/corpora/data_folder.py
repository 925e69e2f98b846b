"""Where a missing corpus comes from, for error messages: the data folder is named by --data-dir or
$MEMLENS_DATA_DIR, and `memlens data fetch` fills it."""

from __future__ import annotations

from inference.core.places import DATA_DIR_ENV


def fetch_hint(corpus: str) -> str:
    """How to get a missing corpus, for error messages."""
    return f"run `memlens data fetch {corpus}`, or pass --data-dir or set {DATA_DIR_ENV} to a data folder that holds it"
