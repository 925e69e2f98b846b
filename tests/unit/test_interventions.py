"""Interventions as data: no-op, memory size, knockout, blocked reads, heads, FF keys."""

import pytest
import torch

from inference.analyses.blocks import attention_blocks
from inference.hooks import hook_points
from inference.interventions import FFKeyScale, HeadRef, InterventionError, Interventions
from inference.trace import run_with_trace
from tests.conftest import SOURCES, TINY_MEMORY

TARGETS = ["a dog plays in the park", "two women read"]


def test_noop_intervention_changes_nothing(tiny):
    plain = run_with_trace(tiny, SOURCES, TARGETS, names=["*.pattern"])
    for noop in (Interventions(), Interventions(memory_size=tiny.config.memory_size)):
        again = run_with_trace(tiny, SOURCES, TARGETS, names=["*.pattern"], interventions=noop)
        assert torch.equal(plain.logits, again.logits)
        for name in plain.tensors:
            assert torch.equal(plain.tensors[name], again.tensors[name])


@pytest.mark.parametrize("size", [0, 1, 2 * TINY_MEMORY, 3 * TINY_MEMORY])
def test_memory_sizes_from_zero_to_three_times_trained_run(tiny_memory, size):
    trace = run_with_trace(tiny_memory, SOURCES, TARGETS, interventions=Interventions(memory_size=size))
    assert torch.isfinite(trace.logits).all()
    assert trace.config["run_memory_size"] == size
    assert [r for r in trace.roles["enc"][0] if r == "mem"] == ["mem"] * size
    assert trace.tensors["encoder.out"].shape[1] == len(trace.roles["enc"][0])


def test_memory_size_changes_output(tiny_memory):
    plain = run_with_trace(tiny_memory, SOURCES, TARGETS)
    lesioned = run_with_trace(tiny_memory, SOURCES, TARGETS, interventions=Interventions(memory_size=0))
    assert not torch.allclose(plain.logits, lesioned.logits)


def test_memory_size_past_three_times_trained_is_refused(tiny_memory):
    with pytest.raises(InterventionError, match="out of range"):
        run_with_trace(tiny_memory, SOURCES, TARGETS, interventions=Interventions(memory_size=3 * TINY_MEMORY + 1))


def test_baseline_refuses_memory(tiny_tokenizer):
    from tests.conftest import make_tiny

    with pytest.raises(InterventionError):
        run_with_trace(
            make_tiny("transformer", tiny_tokenizer), SOURCES, TARGETS, interventions=Interventions(memory_size=1)
        )


@pytest.mark.parametrize("where", ["encoder", "decoder", "both"])
def test_blocking_reads_puts_zero_mass_on_memory_keys(tiny_memory, where):
    trace = run_with_trace(
        tiny_memory, SOURCES, TARGETS, names=["*.pattern"], interventions=Interventions(block_memory_reads=where)
    )
    blocked = {"encoder": ("encoder.",), "decoder": ("decoder.",), "both": ("encoder.", "decoder.")}[where]
    reads = {h.stack: 0.0 for h in attention_blocks(trace)}
    for head in attention_blocks(trace):
        reads[head.stack] += head.read
    for stack, read in reads.items():
        if stack.startswith(blocked):
            assert read == 0.0, stack
    if where == "encoder":
        assert reads["decoder.cross_attn"] > 0.0
    # Writing and processing are untouched: memory queries still see memory.
    assert any(h.process > 0 for h in attention_blocks(trace) if h.stack.startswith("encoder"))


def test_knocked_out_slots_get_no_attention(tiny_memory):
    trace = run_with_trace(
        tiny_memory, SOURCES, TARGETS, names=["*.pattern"], interventions=Interventions(knockout_slots=(0, 2))
    )
    checked = []
    for name, pattern in trace.tensors.items():
        if trace.axes[name][1] == "enc":
            assert pattern[..., [0, 2]].abs().max() == 0.0, name
            assert pattern[..., 1].abs().max() > 0.0, name
            checked.append(name)
    assert {"decoder.layers.0.cross_attn.pattern", "decoder.layers.1.cross_attn.pattern"} <= set(checked), checked


def test_knockout_of_missing_slot_is_refused(tiny_memory):
    with pytest.raises(InterventionError, match="slot 5"):
        run_with_trace(tiny_memory, SOURCES, TARGETS, interventions=Interventions(memory_size=2, knockout_slots=(5,)))


def test_head_ablation_zeroes_exactly_that_head(tiny):
    attn = "decoder.layers.1.cross_attn"
    interventions = Interventions(ablate_heads=(HeadRef(attn=attn, head=1),))
    plain = run_with_trace(tiny, SOURCES, TARGETS, names=[f"{attn}.z"])
    ablated = run_with_trace(tiny, SOURCES, TARGETS, names=[f"{attn}.z"], interventions=interventions)
    z = ablated.tensors[f"{attn}.z"]
    assert z[:, 1].abs().max() == 0.0
    assert torch.equal(z[:, 0], plain.tensors[f"{attn}.z"][:, 0])
    assert not torch.allclose(plain.logits, ablated.logits)


def test_bad_head_references_are_refused(tiny):
    with pytest.raises(InterventionError, match="out of range"):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            interventions=Interventions(ablate_heads=(HeadRef(attn="decoder.layers.0.self_attn", head=2),)),
        )
    with pytest.raises(InterventionError, match="unknown attention module"):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            interventions=Interventions(ablate_heads=(HeadRef(attn="decoder.layers.9.self_attn", head=0),)),
        )


def test_zeroing_ff_keys_zeroes_their_coefficients(tiny):
    ff = "decoder.layers.0.ff"
    plain = run_with_trace(tiny, SOURCES, TARGETS, names=[f"{ff}.keys"])
    keys = tuple(int(k) for k in plain.tensors[f"{ff}.keys"].amax(dim=(0, 1)).topk(3).indices)
    edited = run_with_trace(
        tiny,
        SOURCES,
        TARGETS,
        names=[f"{ff}.keys"],
        interventions=Interventions(scale_ff_keys=(FFKeyScale(ff=ff, keys=keys),)),
    )
    coefficients = edited.tensors[f"{ff}.keys"]
    assert coefficients[..., list(keys)].abs().max() == 0.0
    others = [k for k in range(coefficients.shape[-1]) if k not in keys]
    assert torch.equal(coefficients[..., others], plain.tensors[f"{ff}.keys"][..., others])
    assert not torch.allclose(plain.logits, edited.logits)


def test_out_of_range_ff_key_is_refused(tiny):
    with pytest.raises(InterventionError, match="out of range"):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            interventions=Interventions(scale_ff_keys=(FFKeyScale(ff="decoder.layers.0.ff", keys=(32,)),)),
        )


def test_interventions_reject_unknown_fields():
    with pytest.raises(ValueError):
        Interventions.model_validate({"memory_size": 2, "forget_everything": True})
    with pytest.raises(ValueError):
        Interventions(memory_size=-1)


def test_nothing_stays_on_the_model(tiny):
    with pytest.raises(InterventionError):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            names=["*.pattern"],
            interventions=Interventions(ablate_heads=(HeadRef(attn="decoder.layers.0.self_attn", head=7),)),
        )
    run_with_trace(tiny, SOURCES, TARGETS, interventions=Interventions(block_memory_reads="both"))
    assert not any(point.active for point in hook_points(tiny.model).values())
