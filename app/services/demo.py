"""The demo set: German sentences with reference translations, written for MemLens."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

DEMO_FILE = Path(__file__).parents[1] / "data" / "demo.tsv"


@dataclass(frozen=True)
class DemoSentence:
    source: str
    reference: str


@cache
def demo_sentences() -> tuple[DemoSentence, ...]:
    rows = [line.split("\t") for line in DEMO_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return tuple(DemoSentence(source, reference) for source, reference in rows)
