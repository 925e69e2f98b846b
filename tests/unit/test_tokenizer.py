"""Tokenizer: exact detokenization and readable display strings."""

from inference.core.tokenizer import SPECIAL_TOKENS, TextTokenizer


def test_decode_inverts_encode(tiny_tokenizer: TextTokenizer):
    for text in ["ein Hund läuft durch den Park", "zwei Männer spielen Fußball"]:
        assert tiny_tokenizer.decode(tiny_tokenizer.encode(text)) == text


def test_special_tokens_have_fixed_ids(tiny_tokenizer):
    assert [tiny_tokenizer.tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert tiny_tokenizer.decode([1, *tiny_tokenizer.encode("Hund"), 2, 0]) == "Hund"


def test_display_marks_word_internal_pieces(tiny_tokenizer):
    ids = tiny_tokenizer.encode("Fußballspieler")
    shown = tiny_tokenizer.display_tokens(ids + [tiny_tokenizer.eos_id])
    assert shown[-1] == "<eos>"
    pieces = shown[:-1]
    assert len(pieces) > 1, "an unseen word must split into pieces"
    assert not pieces[0].startswith("##") and all(p.startswith("##") for p in pieces[1:])
    assert "".join(p.removeprefix("##") for p in pieces).replace("▁", "") == "Fußballspieler"
