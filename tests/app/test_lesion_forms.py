"""A family kind's form field of token ids marked `"control": "words"` (the working memory's forced memory) is a
text box whose words are read as the model's tokens once the model is known; its bounds are the kind's own."""

from __future__ import annotations

import pytest

from app.schemas.validation import InputError
from app.services.lesion_forms import asked_lesions, lesion_form_of, parse_lesion_forms, words_to_ids
from inference.core.bounds import MAX_LISTED
from inference.families.working_memory.lesions import ForceMemory, MaskMemory

FORM = {"lesion": "force_memory", "force_memory.tokens": "  Hund Katze "}
IDS = {"Hund": [11, 12], "Katze": [7]}  # a tokenizer that splits "Hund" in two pieces


def test_the_forced_memory_field_is_a_words_control():
    (control,) = lesion_form_of(ForceMemory).fields
    assert (control.name, control.control, control.required) == ("force_memory.tokens", "words", True)
    assert lesion_form_of(MaskMemory).fields == ()


def test_words_are_read_as_the_models_tokens_in_order():
    asked = asked_lesions(FORM, ["force_memory", "mask_memory", "force_memory"])
    assert asked.kinds == ("force_memory", "mask_memory")  # asked twice is asked once
    assert asked.values == (("force_memory.tokens", "Hund Katze"),)
    lesions = parse_lesion_forms(asked, lambda text: [i for word in text.split() for i in IDS[word]])
    assert lesions == (ForceMemory(tokens=(11, 12, 7)), MaskMemory())


def test_words_beyond_the_kinds_bound_are_refused_in_words():
    asked = asked_lesions({"force_memory.tokens": "x"}, ["force_memory"])
    with pytest.raises(
        InputError, match=f"Force the memory: tokens: List should have at most {MAX_LISTED} items after validation, not"
    ):
        parse_lesion_forms(asked, lambda text: list(range(MAX_LISTED + 5)))
    with pytest.raises(InputError, match="Force the memory: tokens: Field required"):
        parse_lesion_forms(asked_lesions({}, ["force_memory"]), lambda text: [])


def test_each_word_is_read_alone(tiny_tokenizer):
    expected = [*tiny_tokenizer.encode("Hund"), *tiny_tokenizer.encode("Katze")]
    assert words_to_ids(tiny_tokenizer, " Hund  Katze") == expected
