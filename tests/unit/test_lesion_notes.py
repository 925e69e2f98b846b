"""Lesion notes in words a reader knows, and what the lesion did, counted by hand."""

from __future__ import annotations

from app.services.lesion_notes import lesion_note, output_change
from app.services.textdiff import word_diff
from inference.core.interventions import (
    Interventions,
    KnockoutSlots,
    MemorySize,
    ResetMemory,
    Scale,
)
from inference.families.active_memory.lesions import ClampGate, EditState


def test_a_knockout_that_changed_nothing_says_so_and_names_the_slots():
    diff = word_diff("A dog runs .", "A dog runs .")
    note = lesion_note(Interventions.of(KnockoutSlots(slots=(2, 5))), 10, output_change(diff))
    assert note == "memory slots 2 and 5 knocked out: no word changed"


def test_changed_words_are_counted_and_every_lesion_is_named():
    # "A boy is jumping jumping ." -> "A boy jumping jump jump ." : "is" removed, "jumping" -> "jump jump" (2 added)
    diff = word_diff("A boy is jumping jumping .", "A boy jumping jump jump .")
    lesion = Interventions.of(MemorySize(size=0), Scale(hook="decoder.layers.1.cross_attn.z", axis="head", index=(3,)))
    assert lesion_note(lesion, 10, output_change(diff)) == (
        "no memory (size 0); decoder.layers.1.cross_attn.z head 3 zeroed: 2 words changed, marked"
    )


def test_state_and_segment_lesions_in_words():
    lesion = Interventions.of(
        EditState(mode="freeze", from_step=3, start=2, stop=5), ClampGate(gate="update", value=0.5, from_step=1)
    )
    assert lesion_note(lesion, 0) == "state positions 2 to 4 frozen from step 3; update gate clamped to 0.5 from step 1"
    assert lesion_note(Interventions.of(ResetMemory(segment=2), KnockoutSlots(slots=(1,))), 8) == (
        "memory slot 1 knocked out; memory reset at segment 2"
    )
    assert lesion_note(Interventions.of(MemorySize(size=5)), 10) == "memory size 5 (trained with 10)"
