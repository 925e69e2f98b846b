"""Word-level difference of two translations, for marking what a lesion changed."""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher


@dataclass
class DiffPart:
    kind: str  # "same", "added" (only in the lesioned text), "removed" (only in the original)
    text: str


def word_diff(original: str, changed: str) -> list[DiffPart]:
    return token_diff(original.split(), changed.split())


def token_diff(a: list[str], b: list[str], separator: str = " ") -> list[DiffPart]:
    """The difference of two token sequences, the tokens of a run joined by `separator`."""
    parts = []
    for op, a0, a1, b0, b1 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(DiffPart("same", separator.join(a[a0:a1])))
            continue
        if a1 > a0:
            parts.append(DiffPart("removed", separator.join(a[a0:a1])))
        if b1 > b0:
            parts.append(DiffPart("added", separator.join(b[b0:b1])))
    return parts
