"""The FF-memory study's files beside a checkpoint (training/studies/ff_keys.py writes them, the app reads them):
the compact trigger record, gzipped, and the analysis by layer."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

TRIGGERS_FILE = "ff_triggers.json.gz"
ANALYSIS_FILE = "ff_analysis.json"


def write_triggers(compact: dict, path: Path) -> None:
    # mtime=0: the same record always gives the same bytes, so a rerun leaves git clean
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as stream:
        stream.write(json.dumps(compact, separators=(",", ":")).encode("utf-8"))


def read_triggers(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        return json.load(stream)
