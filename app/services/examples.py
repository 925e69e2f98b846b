"""The input a page opens a model on, so that its first paint shows a result: the checkpoint's own example
(a task model's), its first measured memory-writing sentence (a working-memory model's), the first demo
sentence (a model that reads German), or that sentence's English reference (a model that continues English)."""

from __future__ import annotations

import json
from functools import cache

from app.services.demo import DemoSentence, demo_sentences
from inference.core.capabilities import Capability
from inference.core.checkpoint import RegistryEntry
from inference.core.family import capabilities_of
from inference.core.places import MEMORY_EXAMPLES_FILE

# written by python -m training.studies.memory_examples


@cache
def _memory_examples_file() -> dict:
    return json.loads(MEMORY_EXAMPLES_FILE.read_text(encoding="utf-8")) if MEMORY_EXAMPLES_FILE.exists() else {}


def memory_examples(model: str) -> tuple[str, list[dict]]:
    """(the corpus measured, the model's measured example sentences: source, memory_tokens, ...);
    none for a model not measured."""
    measured = _memory_examples_file().get("models", {}).get(model, {})
    return measured.get("corpus", ""), measured.get("examples", [])


def demo_inputs(meta: dict, capabilities: frozenset[Capability]) -> list[DemoSentence]:
    """The demo sentences a page offers a model, in the language it reads (each with what it should give where
    that is known): the German sources for a translator from German, their English references for a model that
    continues English text (the reference beside them left empty); none for any other model."""
    if Capability.TRANSLATES in capabilities:
        return list(demo_sentences()) if meta.get("source_language") == "German" else []
    if Capability.GENERATES_TEXT in capabilities:
        return [DemoSentence(demo.reference, "") for demo in demo_sentences()]
    return []


def example_input(entry: RegistryEntry) -> str:
    """What a page runs `entry`'s model on when the address names no input; "" where nothing fits."""
    if entry.meta.get("example"):
        return entry.meta["example"]
    _, measured = memory_examples(entry.name)
    if measured:
        return measured[0]["source"]
    if entry.meta.get("source_language") == "German":
        return demo_sentences()[0].source
    if entry.config is not None and Capability.GENERATES_TEXT in capabilities_of(entry.config):
        return demo_sentences()[0].reference  # the shipped language model reads English
    return ""
