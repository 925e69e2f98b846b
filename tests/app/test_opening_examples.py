"""Every page opens on an example its model gets right: the example measured on the model's validation data
(app/data/opening_examples.json, training.studies.opening_examples), shown by the page that names no input and
judged here by the page's own measure, recomputed by hand: a translation's sentence chrF against the example's
reference, a Neural GPU's sum worked out from its operands, a copy model's answer digits read off the input, a
language model's continuation checked for loops token by token. Segments opens on the RMT copy model on GPT-2,
which copies a validation sample whole (the RMT trained from scratch predicts at most 44 of 48 answer digits of
any of its 256 validation samples)."""

from __future__ import annotations

import html

import pytest
from sacrebleu.metrics import CHRF

from app.services.pages import COMPARE, EXPLORE, FF, FOCUS, MEMORY, SEGMENTS, STATE
from inference.core.capabilities import Capability
from inference.core.checkpoint import load_checkpoint, model_folders
from inference.core.family import capabilities_of
from inference.core.measured_examples import opening_example
from inference.core.places import CHECKPOINTS_DIR
from inference.core.trace import Role
from inference.core.tracing import run_with_trace

RIGHT_CHRF = 60  # a sentence whose translation reads as right
PAGES_WITH_INPUT = (MEMORY, FF, EXPLORE, SEGMENTS, STATE, FOCUS, COMPARE)  # Upload opens on a file, not a text


def lsb_first_sum(text: str) -> str:
    """'10010000+10000101' -> the sum of the two binary numbers written least significant bit first, one bit
    longer than the operands."""
    a, b = text.split("+")
    total = int(a[::-1], 2) + int(b[::-1], 2)
    return format(total, f"0{len(a) + 1}b")[::-1]


def no_loop(ids: list[int]) -> bool:
    """No token three times in a row and no three consecutive tokens twice."""
    for i in range(len(ids) - 2):
        if ids[i] == ids[i + 1] == ids[i + 2]:
            return False
    seen = set()
    for triple in zip(ids, ids[1:], ids[2:]):
        if triple in seen:
            return False
        seen.add(triple)
    return True


def test_the_hand_measures_can_fail():
    assert lsb_first_sum("1111+1000") == "00001"  # 15 + 1 = 16, LSB first
    assert not no_loop([5, 7, 7, 7, 9]) and not no_loop([1, 2, 3, 4, 1, 2, 3]) and no_loop([1, 2, 3, 1, 2, 4])


def judge(name: str, example: dict) -> None:
    """The model `name` on the example, by the measure its page shows, recomputed here."""
    loaded = load_checkpoint(CHECKPOINTS_DIR / name, "cpu")
    text = example["text"]
    if loaded.record.task == "addition":
        assert run_with_trace(loaded, text, names=[]).outputs[0] == lsb_first_sum(text)
    elif loaded.record.task == "copy":  # the answer is the input twice; the model predicts each digit
        source, answer = (part.replace(" ", "") for part in text.split("<bos>"))  # digits apart for GPT-2's tokens
        assert answer == source * 2
        ids = loaded.tokenizer.encode(text)
        predicted = run_with_trace(loaded, text, names=[]).output_ids[0]
        start = ids.index(loaded.config.bos_id) + 1
        assert len(ids) - start == len(answer)  # one token a digit
        assert all(predicted[t - 1] == ids[t] for t in range(start, len(ids)))  # every answer digit predicted
    elif Capability.TRANSLATES in capabilities_of(loaded.config):
        output = run_with_trace(loaded, text, names=[]).outputs[0]
        assert CHRF().sentence_score(output, [example["expected"]]).score >= RIGHT_CHRF, (name, output, example)
    else:
        trace = run_with_trace(loaded, text, names=[], max_new_tokens=24)
        roles = next(iter(trace.roles.values()))[0]
        generated = [i for i, role in zip([None, *trace.output_ids[0]], roles) if role is Role.GENERATED]
        assert generated and no_loop(generated), trace.outputs[0]
        assert trace.outputs[0].split()[0] == example["expected"].split()[0]  # the sentence's own next word


@pytest.mark.parametrize("page", PAGES_WITH_INPUT, ids=lambda page: page.path)
def test_each_page_opens_on_an_example_its_models_get_right(shipped_client, page):
    """The page with no input in its address shows its first model's opening example; every model the page opens
    on (Compare: two) gets it right."""
    example = opening_example(page.opens_on[0])
    assert example is not None, "no opening example: run python -m training.studies.opening_examples"
    for name in page.opens_on if page is COMPARE else page.opens_on[:1]:  # the others: where the first is absent
        judge(name, example)
    shown = shipped_client.get(page.path)
    assert shown.status_code == 200
    assert html.escape(example["text"], quote=False) in shown.text or html.escape(example["text"]) in shown.text


def test_every_served_checkpoint_has_a_measured_opening_example():
    """A model added to the checkpoints folder without one opens on a hand-picked fallback: rerun the study."""
    served = [folder.name for folder in model_folders(CHECKPOINTS_DIR)]
    assert len(served) >= 30 and [name for name in served if opening_example(name) is None] == []
