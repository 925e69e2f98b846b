"""The lesion kinds a model takes, as form controls built from each kind's model and resolved for the model (a
slider up to its max_memory_size, a box per slot, its hook points, words and inputs read as its tokens), and read
back through the same model."""

from __future__ import annotations

import pytest

from app.schemas.validation import InputError
from app.services.lesion_forms import (
    AskedLesions,
    asked_lesions,
    lesion_form_of,
    lesion_forms_for,
    parse_lesion_forms,
    words_to_ids,
)
from inference.core.bounds import MAX_LISTED
from inference.core.hooks import hook_points
from inference.core.interventions import KnockoutSlots, MemorySize, NoiseMemory, Scale, TransplantMemory
from inference.families.working_memory.lesions import ForceMemory, MaskMemory
from tests.conftest import TINY_MEMORY, make_tiny

FORM = {"lesion": "force_memory", "force_memory.tokens": "  Hund Katze "}
IDS = {"Hund": [11, 12], "Katze": [7]}  # a tokenizer that splits "Hund" in two pieces
READERS = {
    "words": lambda text: [i for word in text.split() for i in IDS[word]],
    "input": lambda text: [len(word) for word in text.split()],  # a stand-in reading: a word's length
}


@pytest.fixture(scope="module")
def memtransformer(tiny_tokenizer):
    return make_tiny("memtransformer", tiny_tokenizer)


def test_the_forced_memory_field_is_a_words_control():
    (control,) = lesion_form_of(ForceMemory).fields
    assert (control.name, control.control, control.required) == ("force_memory.tokens", "words", True)
    assert lesion_form_of(MaskMemory).fields == ()


def test_words_are_read_as_the_models_tokens_in_order():
    asked = asked_lesions(FORM, ["force_memory", "mask_memory", "force_memory"])
    assert asked.kinds == ("force_memory", "mask_memory")  # asked twice is asked once
    assert asked.values == (("force_memory.tokens", "Hund Katze"),)
    forms = [lesion_form_of(ForceMemory), lesion_form_of(MaskMemory)]
    assert parse_lesion_forms(asked, forms, READERS) == [ForceMemory(tokens=(11, 12, 7)), MaskMemory()]


def test_words_beyond_the_kinds_bound_are_refused_in_words():
    forms = [lesion_form_of(ForceMemory)]
    asked = asked_lesions({"force_memory.tokens": "x"}, ["force_memory"])
    too_many = {"words": lambda text: list(range(MAX_LISTED + 5))}
    with pytest.raises(
        InputError, match=f"Force the memory: tokens: List should have at most {MAX_LISTED} items after validation, not"
    ):
        parse_lesion_forms(asked, forms, too_many)
    with pytest.raises(InputError, match="Force the memory: tokens: Field required"):
        parse_lesion_forms(asked_lesions({}, ["force_memory"]), forms, READERS)


def test_each_word_is_read_alone(tiny_tokenizer):
    expected = [*tiny_tokenizer.encode("Hund"), *tiny_tokenizer.encode("Katze")]
    assert words_to_ids(tiny_tokenizer, " Hund  Katze") == expected


def test_a_memory_models_forms_are_the_kinds_its_family_declares_resolved_for_the_model(memtransformer):
    forms = {form.kind: form for form in lesion_forms_for(memtransformer)}
    assert list(forms) == ["memory_size", "knockout_slots", "block_memory_reads", "scale"]
    (size,) = forms["memory_size"].fields
    assert (size.control, size.minimum, size.maximum, size.default) == ("slider", 0, 3 * TINY_MEMORY, TINY_MEMORY)
    (slots,) = forms["knockout_slots"].fields
    assert (slots.control, slots.maximum) == ("slots", 3 * TINY_MEMORY - 1)  # a box for each of slots 0 to 8
    hook = forms["scale"].fields[0]
    assert hook.control == "hook" and hook.choices == tuple(hook_points(memtransformer.model))
    assert forms["scale"].advanced and not forms["memory_size"].advanced
    stacks = forms["block_memory_reads"].fields[0]
    assert (stacks.control, stacks.choices, stacks.required) == ("choice", ("encoder", "decoder", "both"), True)


def test_the_slots_sent_one_value_each_are_one_lesion_and_the_trained_size_is_none(memtransformer):
    forms = lesion_forms_for(memtransformer)
    sent = {"knockout_slots.slots": ["4", "1"], "memory_size.size": [str(TINY_MEMORY)]}
    asked = asked_lesions(sent, ["knockout_slots", "memory_size"])
    assert asked.values == (("knockout_slots.slots", "4,1"), ("memory_size.size", str(TINY_MEMORY)))
    assert parse_lesion_forms(asked, forms, READERS) == [KnockoutSlots(slots=(1, 4))]  # size 3: as trained
    smaller = asked_lesions({"memory_size.size": "0"}, ["memory_size"])
    assert parse_lesion_forms(smaller, forms, READERS) == [MemorySize(size=0)]


def test_the_models_own_bounds_and_kinds_are_checked_where_the_form_is_read(memtransformer):
    forms = lesion_forms_for(memtransformer)
    with pytest.raises(InputError, match=r"^Memory size: size 10 is out of range for this model \(0 to 9\)$"):
        parse_lesion_forms(asked_lesions({"memory_size.size": "10"}, ["memory_size"]), forms, READERS)
    with pytest.raises(InputError, match=r"^Knock out memory slots: slots 9 is out of range for this model \(0 to 8\)"):
        parse_lesion_forms(asked_lesions({"knockout_slots.slots": ["9"]}, ["knockout_slots"]), forms, READERS)
    with pytest.raises(
        InputError, match="^mask_memory does not apply to this model; it takes memory_size, knockout_slo"
    ):
        parse_lesion_forms(asked_lesions({}, ["mask_memory"]), forms, READERS)
    with pytest.raises(InputError, match="^unknown lesion kind 'sideways'; the kinds are memory_size, knockout_slots"):
        asked_lesions({}, ["sideways"])
    with pytest.raises(
        InputError, match="Transplant another input's memory: donor is 20,001 characters; at most 20,000"
    ):
        asked_lesions({"transplant_memory.donor": "x" * 20_001}, ["transplant_memory"])


def test_an_input_field_is_read_as_the_model_reads_a_text_and_a_default_fills_in(memtransformer):
    (scale,) = [form for form in lesion_forms_for(memtransformer) if form.kind == "scale"]  # its hooks resolved
    forms = [lesion_form_of(TransplantMemory), lesion_form_of(NoiseMemory), scale]
    hook = "decoder.layers.0.cross_attn.z"
    sent = {
        "transplant_memory.segment": "2",
        "transplant_memory.donor": "one three",
        "noise_memory.segment": "1",
        "scale.hook": hook,
    }
    asked = asked_lesions(sent, ["transplant_memory", "noise_memory", "scale"])
    assert parse_lesion_forms(asked, forms, READERS) == [
        TransplantMemory(segment=2, donor=(3, 5)),  # "one" -> 3, "three" -> 5
        NoiseMemory(segment=1, scale=0.5, seed=0),  # the scale and seed the model gives when left out
        Scale(hook=hook, factor=0.0),
    ]
    with pytest.raises(InputError, match="^Scale a hook point: 'layers.0.attn.z' is not a hook point of this model"):
        parse_lesion_forms(asked_lesions({"scale.hook": "layers.0.attn.z"}, ["scale"]), [scale], READERS)


def test_a_page_opened_with_a_lesion_in_its_address_starts_with_it_ticked_and_filled_in(memtransformer):
    preset = AskedLesions(("memory_size",), (("memory_size.size", "0"),))
    forms = {form.kind: form for form in lesion_forms_for(memtransformer, preset)}
    assert forms["memory_size"].asked and not forms["knockout_slots"].asked
    (size,) = forms["memory_size"].fields
    assert (size.default, size.model_value) == ("0", TINY_MEMORY)  # shown at 0; the model's own is still 3
    slots = AskedLesions(("knockout_slots",), (("knockout_slots.slots", "2,4"),))
    (knockout,) = next(form for form in lesion_forms_for(memtransformer, slots) if form.kind == "knockout_slots").fields
    assert knockout.chosen == {"2", "4"}  # the boxes ticked
