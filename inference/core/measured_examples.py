"""The example inputs the studies chose by measuring, as written to app/data: each page's opening input per model
(training.studies.opening_examples) and the working-memory models' memory-writing sentences
(training.studies.memory_examples). Absent files read as no examples."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from inference.core.places import MEMORY_EXAMPLES_FILE, OPENING_EXAMPLES_FILE


@cache
def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def memory_examples(model: str) -> tuple[str, list[dict]]:
    """(the corpus measured, the model's measured example sentences: source, memory_tokens, ...);
    none for a model not measured."""
    measured = _read(MEMORY_EXAMPLES_FILE).get("models", {}).get(model, {})
    return measured.get("corpus", ""), measured.get("examples", [])


def opening_example(model: str) -> dict | None:
    """The model's opening example: text, expected, output, measure, score, candidates; None where not measured."""
    return _read(OPENING_EXAMPLES_FILE).get("models", {}).get(model)
