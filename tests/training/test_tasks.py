"""The algorithmic tasks of paper 002: samples follow each task's rule (checked
by working them out here, not by calling the generator's own helpers), lengths
are the paper's, and splits are fixed by their seed."""

from __future__ import annotations

import random
import re

import pytest

from training.tasks.rmt_tasks import GO, Sample, padded, polynomial, quadratic_sample, task_split, text


def test_equations_are_written_as_the_paper_writes_them():
    assert polynomial(-4, 392, -2208) == "-4*x^2+392*x-2208=0"  # the paper's example equation
    assert polynomial(1, -98, 552) == "x^2-98*x+552=0"  # and its canonic form
    assert polynomial(1, 0, -25) == "x^2-25=0" and polynomial(-1, 1, 0) == "-x^2+x=0"


@pytest.mark.parametrize(
    ("task", "length"), [("copy", 24 + 1 + 48), ("reverse", 24 + 1 + 24), ("retrieval", 9 + 1 + 1)]
)
def test_copy_reverse_and_retrieval_follow_their_rule(task, length):
    for sample in task_split(task, "test", 200):
        assert len(sample.stream) == length and sample.stream[sample.target_start - 1] == GO
        source, target = text(sample.source), text(sample.target)
        if task == "copy":
            assert target == source + source and set(source) <= set("01234567")
        elif task == "reverse":
            assert target == source[::-1] and set(source) <= set("01234567")
        else:
            pairs, query = dict(zip(source[0:8:2], source[1:8:2])), source[8]
            assert len(pairs) == 4 and all(k.isalpha() for k in pairs) and all(v.isdigit() for v in pairs.values())
            assert target == pairs[query]


def test_a_worked_copy_sample_read_by_hand():
    sample = task_split("copy", "test", 1, length=4)[0]
    source = text(sample.source)
    assert text(sample.stream) == f"{source}<bos>{source}{source}" and len(source) == 4


def parts(sample: Sample) -> list[str]:
    """The quadratic sample's problem and five steps, padding dropped."""
    steps = [text(sample.target[i : i + 30]).rstrip("_") for i in range(0, len(sample.target), 30)]
    return [text(sample.source).rstrip("_"), *steps]


def coefficients(equation: str) -> tuple[int, int, int]:
    """'-4*x^2+392*x-2208=0' -> (-4, 392, -2208), read with a regular expression."""
    found = re.fullmatch(r"([+-]?\d*)\*?x\^2(?:([+-]\d*)\*?x)?([+-]\d+)?=0", equation)
    assert found, equation

    def number(part: str | None, default: int) -> int:
        if part in (None, ""):
            return default
        return int(part + "1") if part in "+-" else int(part)

    return number(found[1], 1), number(found[2], 0), number(found[3], 0)


def test_quadratic_samples_are_correct_mathematics():
    samples = task_split("quadratic", "test", 2000)
    without_roots = 0
    for sample in samples:
        assert len(sample.stream) == 180
        problem, canonic, discriminant, first, second, answer = parts(sample)
        a, b, c = coefficients(problem)
        one, p, q = coefficients(canonic)
        assert one == 1 and (b, c) == (a * p, a * q) and 1 <= abs(a) <= 10  # the problem is a multiple of it
        d = p * p - 4 * q
        assert discriminant.startswith(f"D={abs(p)}^2-4*1*{q}={d}")
        if d < 0:
            without_roots += 1
            assert (first, second, answer) == ("", "", "none")
            continue
        roots = [int(step.rpartition("=")[2]) for step in (first, second)]
        assert all(x * x + p * x + q == 0 for x in roots) and roots[0] <= roots[1]
        assert answer == ",".join(str(x) for x in sorted(set(roots)))
    assert 0.17 < without_roots / len(samples) < 0.23  # the paper's 20%


def test_splits_are_fixed_by_their_seed_and_train_leaves_the_test_out():
    test = task_split("reverse", "test", 50, length=3, symbols=2)  # only 8 possible sources: overlap is certain
    assert test == task_split("reverse", "test", 50, length=3, symbols=2)
    assert test != task_split("reverse", "test", 50, seed=1, length=3, symbols=2)
    held_out = frozenset(test[:4])
    train = task_split("reverse", "train", 100, exclude=held_out, length=3, symbols=2)
    assert not held_out & set(train) and len(train) == 100
    with pytest.raises(ValueError, match="unknown split"):
        task_split("copy", "dev", 1)


def test_a_step_longer_than_its_part_is_refused_not_cut():
    with pytest.raises(ValueError, match="longer than its 30 characters"):
        padded("1" * 31, 30)
    rng = random.Random(7)
    assert all(len(quadratic_sample(rng).stream) == 180 for _ in range(5000))  # every equation fits its parts
