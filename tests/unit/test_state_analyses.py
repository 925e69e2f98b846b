"""The State page's analysis of a recurrent-step run, against the raw
captures of a tiny active memory model: steps in order with their stacks,
map groups averaged, the change per position computed by hand, lesions
seen in the change and the gates, and the tape that grows by one token."""

from __future__ import annotations

import math

import pytest

from inference.analyses.state import state_hooks, state_steps
from inference.core.hooks import hook_points
from inference.core.interventions import Interventions
from inference.core.tracing import run_with_trace
from inference.families.active_memory.lesions import ClampGate, EditState
from tests.conftest import make_tiny_active_memory

SOURCE = "ein Hund spielt im Park"


@pytest.fixture(scope="module")
def extended(tiny_tokenizer):
    return make_tiny_active_memory(tiny_tokenizer, "extended")


PLAIN = Interventions()


def trace(loaded, interventions=PLAIN, new_tokens=4):
    names = state_hooks(list(hook_points(loaded.model)))
    return run_with_trace(loaded, SOURCE, max_new_tokens=new_tokens, interventions=interventions, names=names)


def test_only_the_state_gate_and_tape_hooks_are_read(extended):
    names = state_hooks(list(hook_points(extended.model)))
    assert "input" in names and "decoder.tape" in names
    assert "encoder.layers.1.state" in names and "decoder.layers.0.reset_gate" in names
    assert "encoder.layers.0.state" not in names  # of the states only the last layer's, the state after a step
    assert not [name for name in names if "embed" in name or name.endswith(".candidate")]


def test_steps_come_in_order_with_their_stack_and_each_groups_mean(extended):
    run = trace(extended)
    steps = state_steps(run)
    encoder = run.captures["encoder.layers.1.state"].index_values("step")
    decoder = run.captures["decoder.layers.1.state"].index_values("step")
    assert steps.steps == encoder + decoder and steps.steps == sorted(steps.steps)
    assert steps.stacks == ["encoder"] * len(encoder) + ["decoder"] * len(decoder)
    assert steps.map_groups == [(0, 2), (2, 4), (4, 6), (6, 8)]  # 8 maps in 4 groups
    length = len(steps.positions)
    assert [len(steps.state[0]), len(steps.state[0][0]), len(steps.state[0][0][0])] == [4, 3, length]
    raw = run.tensor("encoder.layers.1.state", step=encoder[2])[0]  # [map width length]
    for g, (a, b) in enumerate(steps.map_groups):
        for row in range(3):
            for k in range(length):
                assert steps.state[2][g][row][k] == pytest.approx((raw[a, row, k] + raw[b - 1, row, k]).item() / 2)
    low, high = steps.state_range
    assert low < 0 < high and low == min(v for s in steps.state for g in s for r in g for v in r)


def test_the_change_is_the_norm_of_the_difference_at_each_position(extended):
    run = trace(extended)
    steps = state_steps(run)
    before = run.tensor("input")[0]  # [map width length]
    after = run.tensor("encoder.layers.1.state", step=0)[0]
    for k in range(len(steps.positions)):
        by_hand = math.sqrt(sum((after[m, w, k] - before[m, w, k]).item() ** 2 for m in range(8) for w in range(3)))
        assert steps.change[0][k] == pytest.approx(by_hand, rel=1e-5)
    first_decoder = steps.stacks.index("decoder")
    last_encoder = run.tensor("encoder.layers.1.state", step=steps.steps[first_decoder - 1])[0]
    first = run.tensor("decoder.layers.1.state", step=steps.steps[first_decoder])[0]
    assert steps.change[first_decoder] == pytest.approx((first - last_encoder).norm(dim=(0, 1)).tolist(), rel=1e-5)


def test_a_zeroed_region_shows_as_one_change_then_none(extended):
    zero = Interventions.of(EditState(mode="zero", from_step=2, start=1, stop=3))
    steps = state_steps(trace(extended, zero))
    plain = state_steps(trace(extended))
    encoder = steps.stacks.count("encoder")
    assert all(v > 0 for v in steps.change[2][1:3])  # the step that zeroes the region moves it
    for step in range(3, encoder):
        assert steps.change[step][1:3] == [0.0, 0.0]  # then it stays zero
        assert steps.change[step][3] > 0  # while the rest of the state moves on
    assert plain.change[3][1] > 0


def test_a_clamped_update_gate_shows_in_the_gate_and_stops_all_change(extended):
    steps = state_steps(trace(extended, Interventions.of(ClampGate(gate="update", value=1.0))))
    assert all(v == pytest.approx(1.0) for row in steps.update for v in row)
    assert all(v == 0.0 for row in steps.change for v in row)
    assert all(0.0 <= v <= 1.0 for row in steps.reset for v in row)


def test_the_tape_fills_one_position_per_decoder_step(extended):
    steps = state_steps(trace(extended, new_tokens=5))
    decoder = steps.stacks.count("decoder")
    assert len(steps.tape) == decoder
    for k, row in enumerate(steps.tape):
        assert all(v > 0 for v in row[:k]) and not any(row[k:]), k


def test_a_model_without_a_tape_has_none(tiny_tokenizer):
    steps = state_steps(trace(make_tiny_active_memory(tiny_tokenizer, "neural_gpu")))
    assert steps.tape is None and set(steps.stacks) == {"encoder"}


def test_a_trace_without_recurrent_steps_is_refused(extended):
    run = run_with_trace(extended, SOURCE, max_new_tokens=2, names=["input"])
    with pytest.raises(ValueError, match="no recurrent-step hooks"):
        state_steps(run)


def test_a_kept_trace_reads_its_state_steps_once(extended):
    """The State page's plain run, kept by the gateway, is read once: the same steps object on every request."""
    plain = trace(extended)
    calls = []

    def counted(t):
        calls.append(t)
        return state_steps(t)

    first = plain.derived("state_steps", counted)
    assert plain.derived("state_steps", counted) is first and calls == [plain]
    assert first.state == state_steps(plain).state  # what it keeps is the analysis itself
    assert trace(extended).derived("state_steps", counted) is not first and len(calls) == 2  # another run: read anew
