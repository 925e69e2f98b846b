"""The algorithmic tasks of the Neural GPU (paper 001), generated here, seeded.

Every number and bit string is written least significant bit first, the
order the reference code uses, so a carry travels towards higher positions.
A task of length ℓ:

- addition:  input a "+" b, two ℓ-bit numbers (2ℓ + 1 symbols); target a + b
             in ℓ + 1 bits.
- reverse:   input ℓ bits; target them reversed.
- duplicate: input ℓ bits; target them twice (2ℓ).

`carry_chain_sample` builds additions that need a long carry: a is all ones
from bit s up, b is 2^s, so the carry runs from bit s to bit ℓ (the probe
"0111…1 + 1" when s = 0).

A sample's text is its input (the model reads it with EOS after); the target
is what the model must write before its EOS. Splits are fixed by their seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal, cast, get_args

SYMBOLS = "01+"
TASKS = ("addition", "reverse", "duplicate")
Task = Literal["addition", "reverse", "duplicate"]


def task_of(model: str, name: str | None) -> Task:
    """The task a model's record names; ValueError naming the tasks where it names none of them."""
    tasks = get_args(Task)
    if name not in tasks:
        raise ValueError(f"{model}'s record names no task of these ({name!r}); known: {', '.join(tasks)}")
    return cast(Task, name)


SPLIT_SEEDS = {"train": 0, "val": 1, "test": 2, "carry": 3}


@dataclass(frozen=True)
class Sample:
    source: str
    target: str


def bits(value: int, length: int) -> str:
    """`value` in `length` bits, least significant first."""
    return "".join(str((value >> i) & 1) for i in range(length))


def sample(task: Task, length: int, rng: random.Random) -> Sample:
    if task == "addition":
        a, b = rng.getrandbits(length), rng.getrandbits(length)
        return Sample(f"{bits(a, length)}+{bits(b, length)}", bits(a + b, length + 1))
    x = "".join(rng.choice("01") for _ in range(length))
    if task == "reverse":
        return Sample(x, x[::-1])
    if task == "duplicate":
        return Sample(x, x + x)
    raise ValueError(f"unknown task {task!r}; the tasks are {', '.join(TASKS)}")


def carry_chain_sample(length: int, rng: random.Random) -> Sample:
    """An addition whose carry runs through at least three quarters of the bits."""
    start = rng.randrange(max(length // 4, 1))
    low = rng.getrandbits(start) if start else 0
    a = low | ((2**length - 1) >> start << start)  # ones from bit `start` up
    b = 1 << start
    return Sample(f"{bits(a, length)}+{bits(b, length)}", bits(a + b, length + 1))


def task_split(task: Task, split: str, length: int, size: int, seed: int = 0) -> list[Sample]:
    """`size` samples of one length, the same on every machine (split "carry": carry-chain additions)."""
    rng = random.Random(f"{task}/{split}/{length}/{SPLIT_SEEDS[split]}/{seed}")
    if split == "carry":
        return [carry_chain_sample(length, rng) for _ in range(size)]
    return [sample(task, length, rng) for _ in range(size)]
