"""Interventions as data: no-op, memory size, knockout, blocked reads, heads, FF keys."""

import pytest
import torch

from inference.analyses.blocks import attention_blocks
from inference.core.axes import TokenAxis
from inference.core.hooks import hook_points
from inference.core.interventions import (
    BlockMemoryReads,
    InterventionError,
    Interventions,
    KnockoutSlots,
    MemorySize,
    Scale,
    ablate_head,
    scale_ff_keys,
)
from inference.core.tracing import run_with_trace
from inference.families.working_memory.lesions import MaskMemory
from tests.conftest import SOURCES, TINY_MEMORY

TARGETS = ["a dog plays in the park", "two women read"]


def test_noop_intervention_changes_nothing(tiny):
    plain = run_with_trace(tiny, SOURCES, TARGETS, names=["*.pattern"])
    for noop in (Interventions(), Interventions.of(MemorySize(size=tiny.config.memory_size))):
        again = run_with_trace(tiny, SOURCES, TARGETS, names=["*.pattern"], interventions=noop)
        assert torch.equal(plain.logits, again.logits)
        assert plain.captures
        for name in plain.captures:
            assert torch.equal(plain.tensor(name), again.tensor(name))


@pytest.mark.parametrize("size", [0, 1, 2 * TINY_MEMORY, 3 * TINY_MEMORY])
def test_memory_sizes_from_zero_to_three_times_trained_run(tiny_memory, size):
    trace = run_with_trace(tiny_memory, SOURCES, TARGETS, interventions=Interventions.of(MemorySize(size=size)))
    assert torch.isfinite(trace.logits).all()
    assert trace.run.memory_size == size
    assert [r for r in trace.roles["enc"][0] if r == "mem"] == ["mem"] * size
    assert trace.tensor("encoder.out").shape[1] == len(trace.roles["enc"][0])


def test_memory_size_changes_output(tiny_memory):
    plain = run_with_trace(tiny_memory, SOURCES, TARGETS)
    lesioned = run_with_trace(tiny_memory, SOURCES, TARGETS, interventions=Interventions.of(MemorySize(size=0)))
    assert not torch.allclose(plain.logits, lesioned.logits)


def test_memory_size_past_three_times_trained_is_refused(tiny_memory):
    with pytest.raises(InterventionError, match="out of range"):
        run_with_trace(
            tiny_memory, SOURCES, TARGETS, interventions=Interventions.of(MemorySize(size=3 * TINY_MEMORY + 1))
        )


def test_baseline_refuses_memory(tiny_tokenizer):
    from tests.conftest import make_tiny

    with pytest.raises(InterventionError):
        run_with_trace(
            make_tiny("transformer", tiny_tokenizer),
            SOURCES,
            TARGETS,
            interventions=Interventions.of(MemorySize(size=1)),
        )


@pytest.mark.parametrize("where", ["encoder", "decoder", "both"])
def test_blocking_reads_puts_zero_mass_on_memory_keys(tiny_memory, where):
    trace = run_with_trace(
        tiny_memory,
        SOURCES,
        TARGETS,
        names=["*.pattern"],
        interventions=Interventions.of(BlockMemoryReads(stacks=where)),
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
        tiny_memory, SOURCES, TARGETS, names=["*.pattern"], interventions=Interventions.of(KnockoutSlots(slots=(0, 2)))
    )
    checked = []
    for name, capture in trace.captures.items():
        pattern = capture.at()
        if capture.positions["key"] == TokenAxis("enc"):
            assert pattern[..., [0, 2]].abs().max() == 0.0, name
            assert pattern[..., 1].abs().max() > 0.0, name
            checked.append(name)
    assert {"decoder.layers.0.cross_attn.pattern", "decoder.layers.1.cross_attn.pattern"} <= set(checked), checked


def test_knockout_of_missing_slot_is_refused(tiny_memory):
    with pytest.raises(InterventionError, match="slot 5"):
        run_with_trace(
            tiny_memory, SOURCES, TARGETS, interventions=Interventions.of(MemorySize(size=2), KnockoutSlots(slots=(5,)))
        )


def test_head_ablation_zeroes_exactly_that_head(tiny):
    attn = "decoder.layers.1.cross_attn"
    interventions = Interventions.of(ablate_head(attn, 1))
    plain = run_with_trace(tiny, SOURCES, TARGETS, names=[f"{attn}.z"])
    ablated = run_with_trace(tiny, SOURCES, TARGETS, names=[f"{attn}.z"], interventions=interventions)
    z = ablated.tensor(f"{attn}.z")
    assert z[:, 1].abs().max() == 0.0
    assert torch.equal(z[:, 0], plain.tensor(f"{attn}.z")[:, 0])
    assert not torch.allclose(plain.logits, ablated.logits)


def test_bad_head_references_are_refused(tiny):
    with pytest.raises(InterventionError, match="out of range"):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            interventions=Interventions.of(ablate_head("decoder.layers.0.self_attn", 2)),
        )
    with pytest.raises(InterventionError, match="unknown hook point 'decoder.layers.9.self_attn.z'"):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            interventions=Interventions.of(ablate_head("decoder.layers.9.self_attn", 0)),
        )


def test_zeroing_ff_keys_zeroes_their_coefficients(tiny):
    ff = "decoder.layers.0.ff"
    plain = run_with_trace(tiny, SOURCES, TARGETS, names=[f"{ff}.keys"])
    keys = tuple(int(k) for k in plain.tensor(f"{ff}.keys").amax(dim=(0, 1)).topk(3).indices)
    edited = run_with_trace(
        tiny,
        SOURCES,
        TARGETS,
        names=[f"{ff}.keys"],
        interventions=Interventions.of(scale_ff_keys(ff, keys, 0.0)),
    )
    coefficients = edited.tensor(f"{ff}.keys")
    assert coefficients[..., list(keys)].abs().max() == 0.0
    others = [k for k in range(coefficients.shape[-1]) if k not in keys]
    assert torch.equal(coefficients[..., others], plain.tensor(f"{ff}.keys")[..., others])
    assert not torch.allclose(plain.logits, edited.logits)


def test_out_of_range_ff_key_is_refused(tiny):
    with pytest.raises(InterventionError, match="out of range"):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            interventions=Interventions.of(scale_ff_keys("decoder.layers.0.ff", (32,), 0.0)),
        )


def test_interventions_reject_unknown_fields():
    with pytest.raises(ValueError):
        Interventions.model_validate([{"kind": "memory_size", "size": 2, "forget_everything": True}])
    with pytest.raises(ValueError):
        Interventions.model_validate([{"kind": "forget_everything"}])
    with pytest.raises(ValueError):
        MemorySize(size=-1)


def test_nothing_stays_on_the_model(tiny):
    with pytest.raises(InterventionError):
        run_with_trace(
            tiny,
            SOURCES,
            TARGETS,
            names=["*.pattern"],
            interventions=Interventions.of(ablate_head("decoder.layers.0.self_attn", 7)),
        )
    blocked = Interventions.of(BlockMemoryReads(stacks="both"))
    if tiny.config.memory_size:
        run_with_trace(tiny, SOURCES, TARGETS, interventions=blocked)
    else:  # a kind the family does not declare for a model without memory is refused before any hook is set
        with pytest.raises(InterventionError, match="^block_memory_reads does not apply to this memory_transformer mo"):
            run_with_trace(tiny, SOURCES, TARGETS, interventions=blocked)
    assert not any(point.active for point in hook_points(tiny.model).values())


def test_interventions_are_normalised_where_they_enter():
    knockout, mask, size = KnockoutSlots(slots=(2, 0, 2)), MaskMemory(), MemorySize(size=3)
    assert knockout.slots == (0, 2)  # a slot asked twice is asked once; their order means nothing
    assert Interventions.of(knockout, mask, size) == Interventions.of(size, mask, knockout)
    assert hash(Interventions.of(knockout, mask)) == hash(Interventions.of(mask, knockout))
    assert Interventions.of(mask, size, mask, size) == Interventions.of(size, mask)
    assert len(Interventions.of(mask, size, mask, size)) == 2
    assert Interventions.of(size, mask).memory_size == 3
    dumped = Interventions.of(mask, knockout).model_dump(mode="json")
    assert dumped == [{"kind": "knockout_slots", "slots": [0, 2]}, {"kind": "mask_memory"}]
    assert Interventions.model_validate(dumped) == Interventions.of(knockout, mask)
    with pytest.raises(ValueError, match=r"two memory sizes asked for at once: \[0, 3\]"):
        Interventions.of(size, MemorySize(size=0))
    with pytest.raises(ValueError, match="give an axis together with the indices along it"):
        Scale(hook="decoder.layers.0.ff.keys", axis="ff_key")
    with pytest.raises(ValueError, match="give an axis together with the indices along it"):
        Scale(hook="decoder.layers.0.ff.keys", index=(1,))


def counted_runs(model) -> list:
    """A list that grows by one whenever the model embeds tokens: proof that it ran."""
    runs = []
    model.embed.register_forward_hook(lambda *_: runs.append(1))
    return runs


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        (
            Scale(hook="decoder.layers.0.self_attn.pattern", axis="query", index=(0,)),
            "axis 'query' of .* no fixed size",
        ),
        (Scale(hook="decoder.layers.0.self_attn.pattern", axis="head", index=(1, 2)), r"head \[2\] out of range"),
        (
            Scale(hook="decoder.layers.0.ff.keys", axis="ff_key", index=(32,)),
            r"ff_key \[32\] out of range for decoder.layers.0.ff.keys \(0 to 31\)",
        ),
        (Scale(hook="decoder.layers.0.ff.keys", axis="head", index=(0,)), "has no axis 'head'"),
    ],
)
def test_a_scale_that_does_not_fit_is_refused_before_the_model_runs(tiny_tokenizer, scale, message):
    from tests.conftest import make_tiny

    loaded = make_tiny("memtransformer", tiny_tokenizer)
    runs = counted_runs(loaded.model)
    run_with_trace(loaded, SOURCES, TARGETS, names=["logits"])
    seen = len(runs)
    assert seen > 0  # the counter sees a run
    for targets in (TARGETS, None):  # teacher-forced, and decoding first
        with pytest.raises(InterventionError, match=message):
            run_with_trace(loaded, SOURCES, targets, interventions=Interventions.of(scale))
    assert len(runs) == seen
    assert not any(point.active for point in hook_points(loaded.model).values())
