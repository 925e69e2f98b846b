"""What the FF page prints (app/figures/ff_views.py): tokens, trigger lines, an edit's outcome."""

import pytest

from app.figures.ff_views import (
    EditOutcome,
    PredictionChange,
    edit_outcome,
    shown_token,
    token_html,
    token_title,
    trigger_lines,
)
from inference.analyses.ff_mining import StoredTrigger


@pytest.mark.parametrize(
    ("token", "shown"),
    [
        ("Hund", "Hund"),
        ("<eos>", "<eos>"),
        ("##\u00a0", "##\\xa0"),  # NO-BREAK SPACE (Zs): language_model id 96, shown as a bare "##" before
        ("##\u00a0m", "##\\xa0m"),
        ("\t", "\\t"),  # the translation models' id 4
        ("##\x0b", "##\\x0b"),
        ("##\u00ad", "##\\xad"),  # SOFT HYPHEN (Cf)
        ("##\u200d", "##\\u200d"),  # ZERO WIDTH JOINER (Cf)
        ("##\u3000", "##\\u3000"),  # IDEOGRAPHIC SPACE (Zs)
        ("##\u2028", "##\\u2028"),  # LINE SEPARATOR (Zl)
        ("##\U000e0001", "##\\U000e0001"),  # LANGUAGE TAG (Cf), beyond the BMP
        ("\\", "\\\\"),  # a backslash doubles, so an escape is never a token's own text
        ("a b", "a b"),  # the ASCII space stays ("<id 7>" from an unknown id)
        ("##\u0301", "##\u25cc\u0301"),  # a combining acute opening the piece sits on U+25CC, not on "#"
        ("\u0301", "\u25cc\u0301"),
        ("e\u0301", "e\u0301"),  # after a letter it combines as written
        ("##\uc911", "##\uc911"),  # HANGUL SYLLABLE JUNG prints (where a font has it): unchanged
    ],
)
def test_shown_token_escapes_what_prints_nothing(token, shown):
    assert shown_token(token) == shown


def test_token_html_escapes_and_names_non_ascii_characters():
    assert token_html("<eos>") == '<span class="token special" title="special token &lt;eos&gt;">eos</span>'
    assert token_html("<|im_start|>", "p 0.5") == (
        '<span class="token special" title="p 0.5 · special token &lt;|im_start|&gt;">im_start</span>'
    )
    assert token_html("<b>x") == "&lt;b&gt;x" and token_html("<") == "&lt;"  # text, not a tokenizer's own token
    assert token_html("Hund") == "Hund"  # no span without a title
    assert token_html("##\u00a0") == "##\\xa0"  # the escape is ASCII: nothing to name
    assert token_title("##\uc911") == "U+C911 HANGUL SYLLABLE JUNG"
    assert token_title("\u2013\u2013a\u00e9") == "U+2013 EN DASH, U+00E9 LATIN SMALL LETTER E WITH ACUTE"
    assert token_html("##\uc911", "p 0.125") == (
        '<span class="token" title="p 0.125 · U+C911 HANGUL SYLLABLE JUNG">##\uc911</span>'
    )
    assert token_html("##\u0301") == (
        '<span class="token" title="U+0301 COMBINING ACUTE ACCENT">##\u25cc\u0301</span>'
    )  # the dotted circle is the page's, not named
    assert token_html('"', "p <1") == '<span class="token" title="p &lt;1">&#34;</span>'


def stored(context, next_token, coefficient, sentence, truncated=False):
    return StoredTrigger(context, next_token, coefficient, sentence, len(context) - 1, truncated)


def test_trigger_lines_merge_identical_contexts_best_first():
    awards = ["<eos>", "Awards"]
    triggers = [
        stored(awards, "include:", 4.65, 1581),
        stored(awards, "and", 4.65, 3143),
        stored(["<eos>", "3rd", "Awards"], "East", 4.55, 7),
        stored(awards, "and", 4.60, 16734),
        stored(["film", "directed"], "by", 4.43, 9, truncated=True),
        stored(["film", "directed"], "by", 4.38, 11, truncated=True),
        stored(["film", "directed"], "by", 4.30, 12),  # the whole prefix: shown without "…", a line of its own
    ]

    lines = trigger_lines(triggers)

    assert [(line.context, line.truncated) for line in lines] == [
        (awards, False),
        (["<eos>", "3rd", "Awards"], False),
        (["film", "directed"], True),
        (["film", "directed"], False),
    ]
    assert [line.sentences for line in lines] == [3, 1, 2, 1]
    assert lines[0].next_tokens == [("and", 2), ("include:", 1)]  # most frequent first
    assert [line.coefficient for line in lines] == [4.65, 4.55, 4.43, 4.30]
    assert [line.context for line in trigger_lines(triggers, limit=2)] == [awards, ["<eos>", "3rd", "Awards"]]
    assert sum(line.sentences for line in trigger_lines(triggers, limit=2)) == 4  # later triggers of kept lines count
    assert trigger_lines([]) == []


def test_edit_outcome_counts_changed_predictions():
    changes = [
        PredictionChange(0, "<eos>", "The", 0.5, "The", 0.4, 0.4),
        PredictionChange(1, "A", "dog", 0.3, "cat", 0.35, 0.1),
        PredictionChange(2, "dog", "runs", 0.6, "runs", 0.61, 0.61),
    ]
    outcome = edit_outcome(changes, "a dog runs", "a cat runs")
    assert (outcome.positions, outcome.changed, outcome.continuation_changed) == (3, 1, True)
    assert outcome.largest_drop == pytest.approx(0.2)  # position 1: 0.3 -> 0.1
    assert edit_outcome([], "x", "x") == EditOutcome(0, 0, 0.0, False)
