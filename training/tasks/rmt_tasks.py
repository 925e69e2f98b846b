"""The algorithmic tasks of the Recurrent Memory Transformer paper (002),
generated here, character level, seeded.

A sample is a source and a target; a decoder-only model reads
source + [GO] + target and is trained on the target positions only (the
paper computes no loss before the start-to-generate token).

- copy:    source X of `length` symbols, target X + X (the paper's copy 24:
           24 + 1 + 48 = 73 tokens).
- reverse: target reversed(X).
- associative retrieval: source k1 v1 .. kK vK q (distinct letter keys,
           digit values, q one of the keys); target the value of q.
- quadratic equations: source an equation a*x^2+b*x+c=0 with integer
           coefficients; target its canonic form, the discriminant, the two
           roots worked out, and the answer ("6,92"), each step padded to
           `QUADRATIC_PART` characters, so that the answer ends a 180-token
           stream; 20% of equations have no real roots (their steps stop at
           the discriminant and the answer is "none").

Symbols and characters share one vocabulary (`TOKENS`, ids 0-3 the
tokenizer's special tokens, GO its <bos>); copy and reverse
draw from its first `symbols` digits (the paper's 8). A split is fixed by
its seed: `task_split(task, "test", n)` is the same on every machine, and a
train split drawn with `exclude=` the test samples never holds one of them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast, get_args

GO = 1  # the start-to-generate token: the tokenizer's <bos> (0 is its <pad>)
FILL = "_"  # pads a quadratic-equation step to its width (a character, read and predicted like any other)
TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>", *"0123456789", *"+-*/^=()D;,?", FILL, *"abcdefghijklmnopqrstuvwxyz")
ID = {token: i for i, token in enumerate(TOKENS)}
DIGIT_IDS = tuple(ID[d] for d in "0123456789")
LETTER_IDS = tuple(ID[c] for c in "abcdefghijklmnopqrstuvwxyz")

QUADRATIC_PART = 30  # characters per step of a quadratic-equation sample, padded
QUADRATIC_STEPS = 5  # canonic form, discriminant, first root, second root, answer
MAX_ROOT = 100
NO_ROOTS_SHARE = 0.2
SPLIT_SEEDS = {"train": 0, "val": 1, "test": 2}

Task = Literal["copy", "reverse", "retrieval", "quadratic"]


def task_of(model: str, name: str | None) -> Task:
    """The task a model's record names; ValueError naming the tasks where it names none of them."""
    tasks = get_args(Task)
    if name not in tasks:
        raise ValueError(f"{model}'s record names no task of these ({name!r}); known: {', '.join(tasks)}")
    return cast(Task, name)


@dataclass(frozen=True)
class Sample:
    source: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def stream(self) -> tuple[int, ...]:
        """What the model reads: source, GO, target."""
        return (*self.source, GO, *self.target)

    @property
    def target_start(self) -> int:
        """Index in `stream` of the first target token (the loss starts here)."""
        return len(self.source) + 1


def text(ids: tuple[int, ...] | list[int]) -> str:
    """Ids as the text the task tokenizer reads back: characters, GO as "<bos>"."""
    return "".join(TOKENS[i] for i in ids)


def encode(characters: str) -> tuple[int, ...]:
    return tuple(ID[c] for c in characters)


def copy_sample(rng: random.Random, length: int = 24, symbols: int = 8) -> Sample:
    source = tuple(rng.choice(DIGIT_IDS[:symbols]) for _ in range(length))
    return Sample(source, source + source)


def reverse_sample(rng: random.Random, length: int = 24, symbols: int = 8) -> Sample:
    source = tuple(rng.choice(DIGIT_IDS[:symbols]) for _ in range(length))
    return Sample(source, source[::-1])


def retrieval_sample(rng: random.Random, pairs: int = 4) -> Sample:
    keys = rng.sample(LETTER_IDS, pairs)
    values = [rng.choice(DIGIT_IDS) for _ in keys]
    asked = rng.randrange(pairs)
    source = tuple(token for pair in zip(keys, values) for token in pair) + (keys[asked],)
    return Sample(source, (values[asked],))


def quadratic_sample(rng: random.Random) -> Sample:
    """One equation and its worked solution (module doc)."""
    if rng.random() < NO_ROOTS_SHARE:
        b = rng.randrange(2 * MAX_ROOT)
        c = rng.randrange(b * b // 4 + 1, MAX_ROOT * MAX_ROOT)  # b^2 - 4c < 0
        steps = [polynomial(1, b, c), f"D={b}^2-4*1*{c}={b * b - 4 * c}", "", "", "none"]
    else:
        x1, x2 = sorted(rng.randrange(-MAX_ROOT, MAX_ROOT) for _ in range(2))
        b, c = -(x1 + x2), x1 * x2
        root = x2 - x1  # sqrt(D): D = (x1 + x2)^2 - 4 x1 x2 = (x2 - x1)^2
        steps = [
            polynomial(1, b, c),
            f"D={abs(b)}^2-4*1*{c}={root * root}={root}^2",
            f"x=({-b}-{root})/2={x1}",
            f"x=({-b}+{root})/2={x2}",
            ",".join(str(x) for x in sorted({x1, x2})),
        ]
    scale = rng.choice([-1, 1]) * rng.randint(1, 10)
    problem = polynomial(scale, scale * b, scale * c)
    source = padded(problem, QUADRATIC_PART - 1)  # GO closes the problem's part
    target = tuple(token for step in steps for token in padded(step, QUADRATIC_PART))
    return Sample(source, target)


def padded(characters: str, width: int) -> tuple[int, ...]:
    if len(characters) > width:
        raise ValueError(f"{characters!r} is longer than its {width} characters")
    return encode(characters + FILL * (width - len(characters)))


def polynomial(a: int, b: int, c: int) -> str:
    """a*x^2+b*x+c=0 as written in the paper: '-4*x^2+392*x-2208=0', 'x^2-98*x+552=0'."""
    terms = [(a, "x^2"), (b, "x"), (c, "")]
    written = ""
    for coefficient, power in terms:
        if coefficient == 0:
            continue
        sign = "-" if coefficient < 0 else ("+" if written else "")
        size = abs(coefficient)
        body = power if size == 1 and power else f"{size}*{power}" if power else str(size)
        written += sign + body
    return (written or "0") + "=0"


GENERATORS: dict[str, Callable[..., Sample]] = {
    "copy": copy_sample,
    "reverse": reverse_sample,
    "retrieval": retrieval_sample,
    "quadratic": quadratic_sample,
}


def task_split(
    task: Task, split: str, size: int, seed: int = 0, exclude: frozenset[Sample] = frozenset(), **options
) -> list[Sample]:
    """`size` samples of a split, the same on every machine for the same (task,
    split, seed, options); none of them in `exclude` (pass the test split when
    drawing the training one)."""
    if split not in SPLIT_SEEDS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLIT_SEEDS)}")
    rng = random.Random(f"{task}/{split}/{seed}/{sorted(options.items())}")  # str seeds hash with sha512: stable
    samples: list[Sample] = []
    while len(samples) < size:
        sample = GENERATORS[task](rng, **options)
        if sample not in exclude:
            samples.append(sample)
    return samples
