"""The State page's and /api/state's run: a recurrent-step model traced on one
input, plainly and under a lesion of its state, checked against the run's
own steps and positions, with the steps the views play."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.schemas.validation import InputError
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.lesion_notes import lesion_note, output_change
from app.services.lesioned import plain_then_lesioned
from app.services.textdiff import DiffPart, token_diff
from inference.analyses.state import StateSteps, state_hooks, state_steps
from inference.core.axes import AxisRole
from inference.core.hooks import hook_points
from inference.core.interventions import Interventions
from inference.core.tokenizer import SPECIAL_TOKENS
from inference.core.trace import Trace

CARRY_PROBE_BITS = 8  # the operands' length of the carry probes, as the addition checkpoints are trained
MAX_STATE_SOURCE_TOKENS = 48  # a run keeps every step's state: steps and positions both grow with the input
DIGITS = 4  # of every value the page's player and the JSON API send


@dataclass
class StateRun:
    plain: Trace
    lesioned: Trace | None  # None: no lesion asked
    steps: StateSteps  # of the lesioned run where there is one, else of the plain run
    plain_steps: StateSteps
    diff: list[DiffPart] | None  # the lesioned output against the plain one, token by token
    note: str = ""  # the lesion in words and what it changed; "" without a lesion
    separator: str = " "  # between the diff's parts: none where every token is one character (bits, digits)


def examples(task: str | None, example: str) -> list[tuple[str, str]]:
    """(label, input) presets: the checkpoint's own example, and for binary addition (least significant bit
    first) inputs whose carry has to travel: 0111...1 + 1 and shorter chains."""
    presets = [("example", example)] if example else []
    if task == "addition":
        n = CARRY_PROBE_BITS
        for chain in (n - 1, n // 2, 2):
            a = "1" * chain + "0" * (n - chain)  # LSB first: `chain` ones at the bottom
            presets.append((f"carry through {chain} bits", f"{a}+1{'0' * (n - 1)}"))
    return presets


def checked_text(gateway: ModelGateway, model: PageModel, text: str) -> str:
    """The text within the gateway's limits, the state views' and the model's vocabulary."""
    text = gateway.check_text(model.loaded, text)
    n_tokens = len(model.loaded.tokenizer.encode(text))
    if n_tokens > MAX_STATE_SOURCE_TOKENS:
        raise InputError(f"the state views take at most {MAX_STATE_SOURCE_TOKENS} tokens; this input has {n_tokens}")
    return gateway.check_vocabulary(model.loaded, text)


def rounded(values: list) -> list:
    """Nested lists of floats of one shape (e.g. [steps, groups, width, length]), each to DIGITS places; through
    numpy, about 5x faster than rounding value by value in Python for a state's 20,000 values."""
    return np.round(np.asarray(values, dtype=np.float64), DIGITS).tolist()


def check_lesion(lesion: Interventions, steps: StateSteps) -> None:
    """Steps and positions of the lesion within the plain run's, as each kind bounds itself (check_within)."""
    extent = {
        "last_step": steps.steps[-1],
        "length": len(steps.positions),
        "encoder_steps": steps.stacks.count("encoder"),
    }
    lesion.check_within(extent)


def output_tokens(trace: Trace) -> list[str]:
    """The first output's tokens, without the special ones (which the shown output drops too)."""
    return [token for token in trace.tokens[trace.axis_with(AxisRole.TARGET)][0] if token not in SPECIAL_TOKENS]


def run_state(gateway: ModelGateway, model: PageModel, text: str, lesion: Interventions) -> StateRun:
    text = checked_text(gateway, model, text)
    names = state_hooks(list(hook_points(model.loaded.model)))
    read: list[StateSteps] = []  # the plain run's steps, read once: to check the lesion against, then to show

    def check(plain: Trace) -> None:
        read.append(plain.derived("state_steps", state_steps))
        check_lesion(lesion, read[0])

    runs = plain_then_lesioned(gateway, model.loaded, text, lesion, names, check=check)
    plain, lesioned = runs.plain, runs.lesioned
    (plain_steps,) = read
    if lesioned is None:
        return StateRun(plain, None, plain_steps, plain_steps, None)
    tokens = output_tokens(plain), output_tokens(lesioned)
    separator = "" if all(len(token) == 1 for token in [*tokens[0], *tokens[1]]) else " "  # as the plain output reads
    diff = token_diff(*tokens, separator)
    note = lesion_note(lesion, 0, output_change(diff, separator))  # no memory size: a state has no slots to count
    return StateRun(plain, lesioned, state_steps(lesioned), plain_steps, diff, note, separator)
