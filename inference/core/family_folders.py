"""Finding the families: every folder under inference/families registers its family when it is imported."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache


@cache
def load_families() -> None:
    """Import every family folder under inference/families, so each registers itself (once: the folders are
    listed on the first call only, not on every lookup)."""
    package = importlib.import_module("inference.families")
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            importlib.import_module(f"inference.families.{module.name}")
