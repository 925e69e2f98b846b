"""A byte-level BPE's pieces (GPT-2's alphabet: "Ġ" a space, "Ċ" a newline, "Ã©" the two bytes of "é") are shown
as the text they spell, never as the alphabet's characters; expected strings written out by hand."""

from __future__ import annotations

import pytest

from inference.core.tokenizer import BYTE_ALPHABET, SpecialIds, TextTokenizer, byte_piece_text
from tests.hugging_face_models import BOS, EOS, PAD, byte_level_tokenizer


def test_the_alphabet_has_one_character_for_every_byte():
    assert sorted(BYTE_ALPHABET.values()) == list(range(256))
    assert (BYTE_ALPHABET["Ġ"], BYTE_ALPHABET["Ċ"], BYTE_ALPHABET["ĉ"], BYTE_ALPHABET["A"]) == (0x20, 0x0A, 0x09, 0x41)


@pytest.mark.parametrize(
    ("piece", "shown"),
    [
        ("ĠParis", "Paris"),  # a word's first piece: bare
        ("ris", "##ris"),  # inside a word
        ("ĠcafÃ©", "café"),  # é = C3 A9
        ("âĢĵ", "##–"),  # – = E2 80 93
        ("ĠâĢĵ", "–"),
        ("Ċ", "↵"),
        ("ĊĊ", "↵↵"),
        ("ĉ", "⇥"),
        ("Ġ", "␣"),
        ("ĠĠ", "␣␣"),
        (".Ċ", "##.↵"),
        ("Ã", "##\\xc3"),  # a byte that stops inside a character: escaped, not shown as "Ã"
        ("ĠðŁĺ", "\\xf0\\x9f\\x98"),
        ("Ġ中", "Ġ中"),  # a character outside the alphabet: not a byte-level piece, shown as it is
    ],
)
def test_a_piece_reads_as_its_text(piece, shown):
    assert byte_piece_text(piece) == shown


def test_display_tokens_of_a_byte_level_tokenizer_show_text_and_named_special_tokens():
    tokenizer = TextTokenizer(byte_level_tokenizer(), SpecialIds(pad=PAD, bos=BOS, eos=EOS, unk=None))
    text = 'The king said: "Paris – naïve"\n\tcafé'
    ids = tokenizer.encode(text)
    shown = tokenizer.display_tokens([tokenizer.bos_id, *ids, tokenizer.tokenizer.token_to_id("<|im_start|>")])
    assert shown[0] == "<s>" and shown[-1] == "<|im_start|>"
    assert not any(mark in token for token in shown for mark in ("Ġ", "Ċ", "ĉ", "Ã", "â"))  # no alphabet, no mojibake
    assert "↵" in shown and "⇥" in shown
    assert tokenizer.decode(ids) == text  # the pieces themselves are unchanged
