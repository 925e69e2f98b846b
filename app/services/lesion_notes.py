"""Lesions said in words a reader knows ("memory slots 2 and 5 knocked out"), and what they changed
("no word changed", "3 words changed, marked"), for the note beside a lesioned result."""

from __future__ import annotations

from app.services.textdiff import DiffPart
from inference.core.interventions import (
    BlockMemoryReads,
    ClampGate,
    EditState,
    EncoderSteps,
    ForceMemory,
    Intervention,
    Interventions,
    KnockoutSlots,
    MaskMemory,
    MemorySize,
    NoiseMemory,
    ResetMemory,
    Scale,
    TransplantMemory,
)

READS = {"encoder": "the encoder", "decoder": "the decoder's cross-attention", "both": "encoder and decoder"}


def listed(numbers: tuple[int, ...] | list[int]) -> str:
    """1 -> "1"; 1, 2 -> "1 and 2"; 1, 2, 3 -> "1, 2 and 3"."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def positions(start: int, stop: int | None) -> str:
    return f"positions {start} to the end" if stop is None else f"positions {start} to {stop - 1}"


def lesion_words(item: Intervention, trained_memory: int) -> str:
    """One lesion in words."""
    match item:
        case MemorySize(size=0):
            return "no memory (size 0)"
        case MemorySize(size=size):
            return f"memory size {size} (trained with {trained_memory})"
        case KnockoutSlots(slots=slots):
            return f"memory slot{'s' if len(slots) > 1 else ''} {listed(slots)} knocked out"
        case BlockMemoryReads(stacks=stacks):
            return f"reads from memory blocked in {READS[stacks]}"
        case MaskMemory():
            return "memory masked (target tokens may not attend to it)"
        case ForceMemory(tokens=tokens):
            return f"memory forced to {len(tokens)} given token{'s' if len(tokens) != 1 else ''}"
        case ResetMemory(segment=segment):
            return f"memory reset at segment {segment}"
        case NoiseMemory(segment=segment, scale=scale, seed=seed):
            return f"noise of scale {scale:g} added to the memory at segment {segment} (seed {seed})"
        case TransplantMemory(segment=segment):
            return f"another input's memory transplanted into segment {segment}"
        case EditState(mode=mode, from_step=step, start=start, stop=stop):
            verb = "zeroed" if mode == "zero" else "frozen"
            return f"state {positions(start, stop)} {verb} from step {step}"
        case EncoderSteps(steps=steps):
            return f"{steps} encoder step{'s' if steps != 1 else ''}"
        case ClampGate(gate=gate, value=value, from_step=step):
            return f"{gate} gate clamped to {value:g} from step {step}"
        case Scale(hook=hook, axis=axis, index=index, factor=factor):
            where = f" {axis} {listed(index)}" if axis and index else ""
            return f"{hook}{where} {'zeroed' if factor == 0 else f'scaled by {factor:g}'}"
    raise TypeError(f"no words for {type(item).__name__}")


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
    said = "; ".join(lesion_words(item, trained_memory) for item in interventions) or "no lesion"
    return f"{said}: {outcome}" if outcome else said
