"""Lesions said in words a reader knows ("memory slots 2 and 5 knocked out", each kind's own `words`), and what
they changed ("no word changed", "3 words changed, marked"), for the note beside a lesioned result."""

from __future__ import annotations

from app.services.textdiff import DiffPart
from inference.core.interventions import Interventions


def output_change(diff: list[DiffPart], separator: str = " ") -> str:
    """What a lesion did to an output, from its difference: "no word changed", "3 words changed, marked"; an
    output of single characters run together (`separator` "": a task's bits or digits) counts characters."""
    noun, count = ("word", lambda text: len(text.split())) if separator else ("character", len)
    added = sum(count(p.text) for p in diff if p.kind == "added")
    removed = sum(count(p.text) for p in diff if p.kind == "removed")
    changed = max(added, removed)  # units in place of the plain output's
    return f"no {noun} changed" if not changed else f"{changed} {noun}{'s' if changed != 1 else ''} changed, marked"


def lesion_note(interventions: Interventions, trained_memory: int, outcome: str | None = None) -> str:
    """The lesions in words, then what they did: "memory slots 2 and 5 knocked out: no word changed"."""
    said = "; ".join(item.words(trained_memory) for item in interventions) or "no lesion"
    return f"{said}: {outcome}" if outcome else said
