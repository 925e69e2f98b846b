"""Memory added to a pretrained causal LM (the pretrained_memory family): each segment is one pass of the unchanged
Hugging Face model over [memory ; tokens ; memory] embeddings, the write block's final states are the next
segment's memory, and the lesions of the segments page act on it. Checked against the Hugging Face model run by
hand, on tiny random GPT-2 and Llama folders (tests/hugging_face_models.py)."""

from __future__ import annotations

from dataclasses import asdict

import pytest
import torch

from inference.core.applied_interventions import applied_interventions
from inference.core.capabilities import Capability
from inference.core.checkpoint import load_checkpoint, save_checkpoint
from inference.core.family import LoadedModel, capabilities_of, family_of, load_families
from inference.core.hooks import registered_hooks
from inference.core.interventions import InterventionError, Interventions, KnockoutSlots, ResetMemory
from inference.families.hugging_face.memory_model import MemoryAugmentedLM, PretrainedMemoryConfig
from tests.hugging_face_models import build_folder

MEMORY, SEGMENT = 3, 6
FIELDS = {"family": "pretrained_memory", "memory_size": MEMORY, "segment_length": SEGMENT, "max_positions": 64}


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def base(request, tmp_path_factory) -> LoadedModel:
    load_families()
    return load_checkpoint(build_folder(request.param, tmp_path_factory.mktemp(request.param)), "cpu")


@pytest.fixture(scope="module")
def wrapped(base: LoadedModel) -> MemoryAugmentedLM:
    model = family_of("pretrained_memory").warm_start(base.model, FIELDS, seed=3)
    assert isinstance(model, MemoryAugmentedLM)
    return model.eval()


def ids_of(length: int, seed: int = 0) -> torch.Tensor:  # [2, length] ids of words, no special token
    return torch.randint(4, 100, (2, length), generator=torch.Generator().manual_seed(seed))


def by_hand(model: MemoryAugmentedLM, memory: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One segment through the Hugging Face model itself: (logits of the tokens [b, L, vocab], the write block's
    final hidden states [b, m, d])."""
    x = torch.cat([memory, model.hf.get_input_embeddings()(ids), memory], dim=1)
    out = model.hf(inputs_embeds=x, output_hidden_states=True, use_cache=False)
    m = memory.shape[1]
    return out.logits[:, m : m + ids.shape[1]], out.hidden_states[-1][:, m + ids.shape[1] :]


@torch.no_grad()
def test_each_segment_is_the_pretrained_model_over_memory_tokens_and_the_written_copy_is_carried(wrapped):
    ids = ids_of(2 * SEGMENT + 2)  # three segments, the last of 2 tokens
    memory = wrapped.initial_memory(2, MEMORY)
    expected = []
    for start in range(0, ids.shape[1], SEGMENT):
        logits, memory = by_hand(wrapped, memory, ids[:, start : start + SEGMENT])
        expected.append(logits)
    got, last = wrapped.read(ids)
    torch.testing.assert_close(got, torch.cat(expected, dim=1), rtol=0, atol=1e-5)
    torch.testing.assert_close(last, memory, rtol=0, atol=1e-5)


@torch.no_grad()
def test_without_memory_one_segment_is_the_pretrained_model(base, wrapped):
    ids = ids_of(SEGMENT)
    torch.testing.assert_close(wrapped(ids, memory_size=0), base.model(ids), rtol=0, atol=1e-5)


@torch.no_grad()
def test_the_control_resets_the_memory_at_every_segment(base, wrapped):
    reset = family_of("pretrained_memory").warm_start(base.model, {**FIELDS, "carry_memory": False}, seed=3).eval()
    ids = ids_of(2 * SEGMENT)
    second, _ = by_hand(reset, reset.initial_memory(2, MEMORY), ids[:, SEGMENT:])
    torch.testing.assert_close(reset(ids)[:, SEGMENT:], second, rtol=0, atol=1e-5)
    assert (wrapped(ids)[:, SEGMENT:] - second).abs().max() > 1e-3  # the carried memory differs from a fresh one


def test_the_initial_memory_is_scaled_like_the_token_embeddings(base, wrapped):
    embeddings = base.model.hf.get_input_embeddings().weight
    assert wrapped.memory_init.shape == (MEMORY, embeddings.shape[1])
    ratio = float(wrapped.memory_init.detach().std() / embeddings.detach().std())
    assert 0.5 < ratio < 1.5  # randn(m, d) x std(embeddings), as paper 002's wrapper draws them


def test_the_second_segments_loss_reaches_the_initial_memory_through_the_handoff_unless_cut(base):
    """Segment 1 reads what segment 0 wrote, so its loss reaches the trained initial memory only through segment 0:
    with full BPTT it does, with the handoff detached (bptt_depth 0) it does not."""
    ids = ids_of(2 * SEGMENT)

    def initial_memory_gradient(depth: int) -> float:
        model = family_of("pretrained_memory").warm_start(base.model, {**FIELDS, "bptt_depth": depth}, seed=3)
        model(ids)[:, SEGMENT:].sum().backward()  # the loss of the second segment only
        assert model.memory_init.grad is not None
        return float(model.memory_init.grad.abs().sum())

    assert initial_memory_gradient(-1) > 0
    assert initial_memory_gradient(1) > 0  # one handoff: segment 0 -> 1
    assert initial_memory_gradient(0) == 0


def test_one_handoff_of_backpropagation_stops_before_the_second(base):
    """bptt_depth 1: the third segment's loss reaches segment 1's write block, not segment 0's, so not the initial
    memory; with depth 2 it does."""
    ids = ids_of(3 * SEGMENT)

    def initial_memory_gradient(depth: int) -> float:
        model = family_of("pretrained_memory").warm_start(base.model, {**FIELDS, "bptt_depth": depth}, seed=3)
        model(ids)[:, 2 * SEGMENT :].sum().backward()  # the loss of the third segment only
        assert model.memory_init.grad is not None
        return float(model.memory_init.grad.abs().sum())

    assert initial_memory_gradient(1) == 0
    assert initial_memory_gradient(2) > 0


@torch.no_grad()
def test_the_written_memory_is_what_the_lm_head_reads_at_the_write_block(wrapped):
    """The next memory is the final norm's output at the write positions (captured at the `out` hook point)."""
    ids = ids_of(SEGMENT)
    seen: list[torch.Tensor] = []
    with registered_hooks(wrapped, [("out", lambda x, point: seen.append(x) or x)]):
        _, memory = wrapped.read(ids)
    torch.testing.assert_close(memory, seen[0][:, MEMORY + SEGMENT :], rtol=0, atol=0)


@torch.no_grad()
def test_knocking_out_a_read_slot_hides_it_from_every_position(wrapped):
    ids = ids_of(SEGMENT)
    hooks = family_of("pretrained_memory").intervention_hooks(wrapped, KnockoutSlots(slots=(1,)), MEMORY)
    assert hooks is not None and [name for name, _ in hooks] == ["memory.keys"]
    with registered_hooks(wrapped, hooks):
        got = wrapped(ids)
    memory = wrapped.initial_memory(2, MEMORY)
    x = torch.cat([memory, wrapped.hf.get_input_embeddings()(ids), memory], dim=1)
    mask = torch.ones(2, x.shape[1], dtype=torch.long)
    mask[:, 1] = 0  # read slot 1
    expected = wrapped.hf(inputs_embeds=x, attention_mask=mask, use_cache=False).logits[:, MEMORY : MEMORY + SEGMENT]
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    assert (got - wrapped(ids)).abs().max() > 1e-4
    with pytest.raises(InterventionError, match="out of range"):
        family_of("pretrained_memory").intervention_hooks(wrapped, KnockoutSlots(slots=(MEMORY,)), MEMORY)


@torch.no_grad()
def test_a_reset_lesion_on_the_second_segment_equals_a_fresh_memory_there(base, wrapped):
    ids = ids_of(2 * SEGMENT)
    with applied_interventions(wrapped, Interventions((ResetMemory(segment=1),))) as memory_size:
        lesioned = wrapped(ids, memory_size)
    second, _ = by_hand(wrapped, wrapped.initial_memory(2, MEMORY), ids[:, SEGMENT:])
    torch.testing.assert_close(lesioned[:, SEGMENT:], second, rtol=0, atol=1e-5)
    torch.testing.assert_close(lesioned[:, :SEGMENT], wrapped(ids)[:, :SEGMENT], rtol=0, atol=1e-6)


def test_it_saves_and_loads_as_a_memlens_checkpoint_with_its_tied_weights(base, wrapped, tmp_path):
    folder = save_checkpoint(tmp_path / "wrapped", wrapped, base.tokenizer, {"description": "test"}, {})
    loaded = load_checkpoint(folder, "cpu")
    assert isinstance(loaded.model, MemoryAugmentedLM)
    assert capabilities_of(loaded.config) == {
        Capability.ATTENTION,
        Capability.SEGMENTS,
        Capability.NEXT_TOKEN,
        Capability.MEMORY_TOKENS,
    }
    ids = ids_of(2 * SEGMENT)
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(ids), wrapped(ids), rtol=0, atol=1e-6)


def test_the_config_refuses_segments_and_memory_beyond_the_models_positions(base):
    fields = asdict(base.model.base_config)
    with pytest.raises(ValueError, match="exceed the model's 64 positions"):
        PretrainedMemoryConfig(base=fields, memory_size=10, segment_length=30)  # 30 + 2 x 20 > 64
    with pytest.raises(ValueError, match="memory_size and segment_length"):
        PretrainedMemoryConfig(base=fields, memory_size=0)
    with pytest.raises(ValueError, match="Hugging Face causal language model"):
        PretrainedMemoryConfig(base={"family": "language_model"})


def test_memory_is_added_to_a_hugging_face_model_only(base, wrapped):
    family = family_of("pretrained_memory")
    with pytest.raises(ValueError, match="Hugging Face causal language model"):
        family.warm_start(wrapped, FIELDS, seed=0)  # memory on memory
    with pytest.raises(ValueError, match="remove model.base"):
        family.warm_start(base.model, {**FIELDS, "base": {}}, seed=0)
