"""The input a page opens a model on, so that its first paint shows a result: the example measured on the model's
validation data (app/data/opening_examples.json, training.studies.opening_examples), else the checkpoint's own
example (a task model's or a folder's), its first measured memory-writing sentence (a working-memory model's), the
first demo sentence (a model that reads German), or that sentence's English reference (a model that continues
English)."""

from __future__ import annotations

from app.services.demo import DemoSentence, demo_sentences
from inference.core.capabilities import Capability
from inference.core.checkpoint import RegistryEntry
from inference.core.family import capabilities_of
from inference.core.measured_examples import memory_examples, opening_example
from inference.core.model_record import ModelRecord


def demo_inputs(record: ModelRecord, capabilities: frozenset[Capability]) -> list[DemoSentence]:
    """The demo sentences a page offers a model, in the language it reads (each with what it should give where
    that is known): the German sources for a translator from German, their English references for a model that
    continues English text (the reference beside them left empty); none for any other model."""
    if Capability.TRANSLATES in capabilities:
        return list(demo_sentences()) if record.source_language == "German" else []
    if Capability.GENERATES_TEXT in capabilities:
        return [DemoSentence(demo.reference, "") for demo in demo_sentences()]
    return []


def example_input(entry: RegistryEntry) -> str:
    """What a page runs `entry`'s model on when the address names no input; "" where nothing fits."""
    opening = opening_example(entry.name)
    if opening:
        return opening["text"]
    if entry.record.example:
        return entry.record.example
    _, measured = memory_examples(entry.name)
    if measured:
        return measured[0]["source"]
    if entry.record.source_language == "German":
        return demo_sentences()[0].source
    if entry.config is not None and Capability.GENERATES_TEXT in capabilities_of(entry.config):
        return demo_sentences()[0].reference  # the shipped language model reads English
    return ""
