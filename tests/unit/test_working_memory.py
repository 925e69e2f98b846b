"""Working-memory decoder (paper 004): memory cap, translation, lesions,
seeds, cache, the training step of Algorithm 1, checkpoints, the choice hook."""

import math

import pytest
import torch
import torch.nn.functional as F

from inference.core.applied_interventions import applied_interventions
from inference.core.checkpoint import load_checkpoint, save_checkpoint
from inference.core.decoding import pad_batch
from inference.core.family import build_model, config_from_dict
from inference.core.hooks import HookPoint, registered_hooks
from inference.core.interventions import InterventionError, Interventions, MemorySize
from inference.core.memory_decisions import CHOICE_COLUMNS
from inference.families.working_memory.generation import type_labels, wm_generate, wm_training_forward
from inference.families.working_memory.lesions import ForceMemory, MaskMemory
from inference.families.working_memory.model import (
    WorkingMemoryConfig,
    WorkingMemoryTransformer,
)
from tests.conftest import SOURCES, TINY_MEMORY

TARGETS = ["a dog plays in the park", "two women read"]
STEPS = 16


def tiny_wm_config(vocab_size: int) -> WorkingMemoryConfig:
    return WorkingMemoryConfig(
        vocab_size=vocab_size,
        d_model=16,
        d_ff=32,
        n_heads=2,
        n_encoder_layers=2,
        n_decoder_layers=2,
        memory_size=TINY_MEMORY,
        max_positions=64,
    )


@pytest.fixture
def wm(tiny_tokenizer) -> WorkingMemoryTransformer:
    torch.manual_seed(0)
    return build_model(tiny_wm_config(tiny_tokenizer.vocab_size)).eval()


@pytest.fixture
def hungry(wm) -> WorkingMemoryTransformer:
    """The tiny model with its type head biased towards memory: it asks for
    memory at every step, so the memory cap is always reached."""
    with torch.no_grad():
        wm.type_head.bias.copy_(torch.tensor([20.0, -20.0]))
    return wm


@pytest.fixture
def keen(wm) -> WorkingMemoryTransformer:
    """The tiny model with a mild bias towards memory: it writes some memory
    tokens, then target tokens."""
    with torch.no_grad():
        wm.type_head.bias.copy_(torch.tensor([1.0, 0.0]))
    return wm


@pytest.fixture
def src(tiny_tokenizer) -> torch.Tensor:
    return pad_batch(tiny_tokenizer.encode_sources(SOURCES), 0)


@pytest.fixture
def gold(tiny_tokenizer) -> list[list[int]]:
    return [ids + [tiny_tokenizer.eos_id] for ids in tiny_tokenizer.encode_batch(TARGETS)]


# ---------------------------------------------------------------- config


def test_config_validates_and_round_trips_through_dispatch():
    config = tiny_wm_config(40)
    assert config.max_memory_size == 2 * TINY_MEMORY
    from dataclasses import asdict

    assert config_from_dict(asdict(config)) == config
    assert isinstance(build_model(config), WorkingMemoryTransformer)
    for bad in ({"memory_size": 0}, {"top_p": 0.0}, {"top_p": 1.5}, {"family": "memtransformer"}, {"d_model": 15}):
        with pytest.raises(ValueError):
            WorkingMemoryConfig(**{**asdict(config), **bad})


# ---------------------------------------------------------------- generation


@pytest.mark.parametrize("size", [None, 0, 1, 2 * TINY_MEMORY])
def test_memory_never_exceeds_its_size(wm, hungry, src, size):
    cap = TINY_MEMORY if size is None else size
    lesion = Interventions() if size is None else Interventions.of(MemorySize(size=size))
    out = wm_generate(hungry, src, lesion, max_new_tokens=STEPS)
    assert out.memory_size == cap
    for example in out.examples:
        assert len(example.memory) == cap  # it always asks: the cap is reached exactly, never passed
        assert example.types[:cap] == [0] * cap


def test_memory_cap_holds_when_the_type_head_decides(keen, src):
    written = []
    for size in (0, 1, TINY_MEMORY, 2 * TINY_MEMORY):
        for seed in range(3):
            out = wm_generate(keen, src, Interventions.of(MemorySize(size=size)), seed=seed, max_new_tokens=STEPS)
            assert all(len(e.memory) <= size for e in out.examples)
            written += [len(e.memory) for e in out.examples]
    assert max(written) > 0


def test_memory_size_past_twice_trained_is_refused(wm, src):
    with pytest.raises(InterventionError, match="out of range"):
        wm_generate(wm, src, Interventions.of(MemorySize(size=2 * TINY_MEMORY + 1)))


def test_translation_is_the_target_type_tokens(keen, src):
    eos = keen.config.eos_id
    with torch.no_grad():  # make EOS likely, so that stopping at a target EOS is exercised
        keen.embed.weight[eos] *= 3
    out = wm_generate(keen, src, max_new_tokens=STEPS)
    assert any(e.ids[-1] == eos for e in out.examples)
    for row, example in enumerate(out.examples):
        targets = [i for i, k in zip(example.ids, example.types) if k == 1]
        assert example.translation == (targets[:-1] if targets and targets[-1] == eos else targets)
        assert eos not in example.translation
        assert example.memory == [i for i, k in zip(example.ids, example.types) if k == 0]
        assert example.ids == out.ids[row, 1:][out.key_mask[row, 1:]].tolist()
    assert any(1 in e.types for e in out.examples) and any(0 in e.types for e in out.examples)


def test_cached_generation_equals_uncached(keen, src):
    for model_lesion in (None, Interventions.of(MaskMemory()), Interventions.of(MemorySize(size=2 * TINY_MEMORY))):
        cached = wm_generate(keen, src, model_lesion, seed=3, max_new_tokens=STEPS)
        uncached = wm_generate(keen, src, model_lesion, seed=3, max_new_tokens=STEPS, use_cache=False)
        assert cached.types.eq(0).any()
        assert torch.equal(cached.ids, uncached.ids)
        assert torch.equal(cached.types, uncached.types)


def test_fixed_seed_reproduces_memory_and_seeds_differ(hungry, src):
    first = [e.memory for e in wm_generate(hungry, src, seed=7, max_new_tokens=STEPS).examples]
    again = [e.memory for e in wm_generate(hungry, src, seed=7, max_new_tokens=STEPS).examples]
    assert first == again
    others = [[e.memory for e in wm_generate(hungry, src, seed=s, max_new_tokens=STEPS).examples] for s in range(8)]
    assert any(memory != first for memory in others)
    special = {hungry.config.pad_id, hungry.config.bos_id, hungry.config.eos_id}
    assert not special & {t for memory in others for row in memory for t in row}


def greedy_after_its_stream(model: WorkingMemoryTransformer, src: torch.Tensor, example) -> bool:
    """Whether every target token of a generated example is the model's greedy
    choice after the stream before it (memory included): the translation is
    conditioned on exactly that memory. src [1, n]."""
    c = model.config
    ids = torch.tensor([[c.bos_id] + example.ids])  # [1, 1 + t]
    types = torch.tensor([[1] + example.types])
    with torch.no_grad():
        token_logits, _ = model(src, ids, types)  # [1, 1 + t, vocab]
    predicted = token_logits[0, :-1].argmax(dim=-1).tolist()  # position s predicts element s + 1
    return all(predicted[s] == token for s, (token, kind) in enumerate(zip(example.ids, example.types)) if kind == 1)


@pytest.mark.parametrize("memory_bias", [20.0, 0.0, -20.0])  # the head always, sometimes, never asks for memory
def test_forced_memory_is_exactly_the_memory_written_first(wm, src, memory_bias):
    with torch.no_grad():
        wm.type_head.bias.copy_(torch.tensor([memory_bias, 0.0]))
    forced = (5, 6, 7)
    out = wm_generate(wm, src, Interventions.of(ForceMemory(tokens=forced)), max_new_tokens=STEPS)
    for row, example in enumerate(out.examples):
        assert example.memory == list(forced)
        assert example.types[: len(forced)] == [0] * len(forced) and set(example.types[len(forced) :]) == {1}
        assert greedy_after_its_stream(wm, src[row : row + 1], example)
        assert not out.choices[
            row, :, CHOICE_COLUMNS.index("nucleus_size")
        ].any()  # nothing sampled: forced memory, greedy targets
    other = wm_generate(wm, src, Interventions.of(ForceMemory(tokens=(8, 9, 10))), max_new_tokens=STEPS)
    assert [e.translation for e in other.examples] != [
        e.translation for e in out.examples
    ]  # the translation reads the memory


def test_forced_memory_must_fit_the_memory(wm, src):
    with pytest.raises(InterventionError, match="do not fit a memory of 3"):
        wm_generate(wm, src, Interventions.of(ForceMemory(tokens=(1, 2, 3, 4)), MemorySize(size=3)))


def _patterns_during_generation(model, src, lesion):
    """(key types, pattern) for every decoder self-attention call while generating."""
    seen, calls = {}, []

    def types(t: torch.Tensor, point: HookPoint) -> None:
        seen["types"] = t.clone()

    def pattern(p: torch.Tensor, point: HookPoint) -> None:
        calls.append((seen["types"], p.detach().clone()))

    names = [f"decoder.layers.{i}.self_attn.pattern" for i in range(model.config.n_decoder_layers)]
    with registered_hooks(model, [("decoder.wm.types", types)] + [(n, pattern) for n in names]):
        out = wm_generate(model, src, lesion, max_new_tokens=STEPS)
    return out, calls


def _mass_target_queries_on_memory(calls) -> tuple[float, float]:
    """(mass from target-type queries onto memory keys, from memory queries onto memory keys)."""
    target_mass = memory_mass = 0.0
    for types, pattern in calls:  # types [b, k], pattern [b, h, q, k]
        q = pattern.shape[2]
        query_types, memory_keys = types[:, -q:], (types == 0)[:, None, None, :]
        on_memory = (pattern * memory_keys).sum(dim=-1)  # [b, h, q]
        target_mass += on_memory[(query_types == 1)[:, None, :].expand_as(on_memory)].sum().item()
        memory_mass += on_memory[(query_types == 0)[:, None, :].expand_as(on_memory)].sum().item()
    return target_mass, memory_mass


def test_masking_memory_blocks_target_queries_from_memory_keys(hungry, src):
    out, calls = _patterns_during_generation(hungry, src, Interventions.of(MaskMemory()))
    assert all(len(e.memory) == TINY_MEMORY for e in out.examples)  # memory is still generated
    assert len(calls) == (out.ids.shape[1] - 1) * hungry.config.n_decoder_layers
    target_mass, memory_mass = _mass_target_queries_on_memory(calls)
    assert target_mass == 0.0
    assert memory_mass > 0.0  # memory queries still read memory
    for _, pattern in calls:  # rows still sum to one
        assert torch.allclose(pattern.sum(dim=-1), torch.ones(()), atol=1e-5)
    _, plain_calls = _patterns_during_generation(hungry, src, None)
    assert _mass_target_queries_on_memory(plain_calls)[0] > 0.0


def test_masking_memory_in_a_teacher_forced_pass(hungry, src):
    out = wm_generate(hungry, src, max_new_tokens=STEPS)
    captured = {}

    def capture(p: torch.Tensor, point: HookPoint) -> None:
        captured[point.name] = p

    names = [f"decoder.layers.{i}.self_attn.pattern" for i in range(2)]
    lesion = Interventions.of(MaskMemory())
    with (
        torch.no_grad(),
        applied_interventions(hungry, lesion),
        registered_hooks(hungry, [(n, capture) for n in names]),
    ):
        hungry(src, out.ids, out.types, out.key_mask)
    blocked = (out.types == 1)[:, None, :, None] & (out.types == 0)[:, None, None, :]  # [b, 1, q, k]
    for name in names:
        assert captured[name].masked_select(blocked).abs().max() == 0.0


def test_choice_hook_records_one_entry_per_generated_token(keen, src):
    wm = keen
    records = []

    def capture(record: torch.Tensor, point: HookPoint) -> None:
        records.append(record.clone())

    with registered_hooks(wm, [("decoder.wm.choice", capture)]):
        out = wm_generate(wm, src, max_new_tokens=STEPS)
    assert len(records) == out.ids.shape[1] - 1
    assert out.types.eq(0).any()
    stacked = torch.stack(records, dim=1)  # [b, steps, 7]
    assert stacked.shape == (len(SOURCES), len(records), len(CHOICE_COLUMNS))
    col = {name: i for i, name in enumerate(CHOICE_COLUMNS)}
    for row, example in enumerate(out.examples):
        active = stacked[row, :, col["active"]] == 1
        assert int(active.sum()) == len(example.ids)
        assert stacked[row, active, col["token"]].long().tolist() == example.ids
        assert stacked[row, active, col["type"]].long().tolist() == example.types
        probs = stacked[row, :, [col["p_memory"], col["p_target"]]]
        assert torch.allclose(probs.sum(dim=-1), torch.ones(()))
        sampled = stacked[row, active, col["nucleus_size"]]
        memory = stacked[row, active, col["type"]] == 0
        assert (sampled[memory] >= 1).all() and (sampled[~memory] == 0).all()


# ---------------------------------------------------------------- training


def test_type_labels_follow_the_rule():
    p = torch.tensor([0.9, 0.1, 0.3, 0.8, 0.05, 0.2])
    every = torch.ones(6, dtype=torch.bool)
    # Four below the threshold, clamped to M - 1 = 2: the two hardest positions.
    assert type_labels(p, every, every, 3, 0.5).tolist() == [1, 0, 1, 1, 0, 1]
    # None below the threshold: still exactly one memory label (no collapse to 0).
    assert type_labels(p, every, every, 3, 0.01).tolist() == [1, 1, 1, 1, 0, 1]
    # Only eligible positions (memory not full) may be labelled memory.
    eligible = torch.tensor([True, False, True, True, False, False])
    assert type_labels(p, eligible, every, 3, 0.5).tolist() == [1, 1, 0, 1, 1, 1]
    # Unlabelled positions stay -100; nothing eligible means all target.
    valid = torch.tensor([True, True, True, False, False, False])
    assert type_labels(p, valid & False, valid, 3, 0.5).tolist() == [1, 1, 1, -100, -100, -100]


def test_training_forward_builds_algorithm_1_stream(wm, src, gold):
    out = wm_training_forward(wm, src, gold, seed=1)
    assert torch.isfinite(out.loss) and torch.isfinite(out.target_loss) and torch.isfinite(out.type_loss)
    out.loss.backward()
    assert wm.type_head.weight.grad is not None and wm.type_head.weight.grad.abs().sum() > 0
    for row, target in enumerate(gold):
        real = out.key_mask[row]
        ids, types = out.ids[row][real].tolist(), out.types[row][real].tolist()
        assert ids[0] == wm.config.bos_id and types[0] == 1
        assert [i for i, k in zip(ids[1:], types[1:]) if k == 1] == target  # gold tokens, in order, complete
        assert types[1:].count(0) <= TINY_MEMORY


def test_target_loss_ignores_memory_positions(hungry, src, gold):
    base = wm_training_forward(hungry, src, gold, seed=2)
    memory_next = torch.zeros_like(base.types, dtype=torch.bool)
    memory_next[:, :-1] = (base.types[:, 1:] == 0) & base.key_mask[:, 1:]  # positions predicting a memory token
    target_next = torch.zeros_like(memory_next)
    target_next[:, :-1] = (base.types[:, 1:] == 1) & base.key_mask[:, 1:]
    assert memory_next.any() and target_next.any()

    def perturb(where):
        def hook(logits: torch.Tensor, point: HookPoint) -> torch.Tensor | None:
            if logits.shape[1] == 1:  # the no-grad build decodes one element at a time: leave it alone
                return None
            return logits + 10.0 * torch.randn_like(logits) * where[..., None]

        return hook

    with registered_hooks(hungry, [("logits", perturb(memory_next))]):
        memory_noise = wm_training_forward(hungry, src, gold, seed=2)
    assert torch.equal(memory_noise.ids, base.ids)
    assert torch.allclose(memory_noise.target_loss, base.target_loss)
    with registered_hooks(hungry, [("logits", perturb(target_next))]):
        target_noise = wm_training_forward(hungry, src, gold, seed=2)
    assert not torch.allclose(target_noise.target_loss, base.target_loss)


def test_type_loss_is_cross_entropy_on_the_documented_labels(hungry, src, gold):
    wm = hungry  # memory fills at once, so the "memory not full" condition matters
    out = wm_training_forward(wm, src, gold, seed=4, type_threshold=0.5)
    with torch.no_grad():
        token_logits, type_logits = wm(src, out.ids, out.types, out.key_mask)
    for row, target in enumerate(gold):
        real_next = out.key_mask[row, 1:]
        n = int(real_next.sum())
        # gold probabilities are those of the next gold target token
        types = out.types[row, : n + 1].tolist()
        probs = token_logits[row, :n].softmax(dim=-1)
        index = [sum(1 for k in types[1 : s + 1] if k == 1) for s in range(n)]
        expected = probs[torch.arange(n), torch.tensor([target[i] for i in index])]
        assert torch.allclose(out.gold_probs[row, :n], expected, atol=1e-6)
        memory_before = torch.tensor([types[: s + 1].count(0) for s in range(n)])
        eligible = memory_before < TINY_MEMORY
        labels = type_labels(out.gold_probs[row, :n], eligible, torch.ones(n, dtype=torch.bool), TINY_MEMORY, 0.5)
        assert torch.equal(out.type_labels[row, :n], labels)
        assert 1 <= int((labels == 0).sum()) <= TINY_MEMORY - 1
        assert not eligible.all()
        assert (out.type_labels[row, n:] == -100).all()
    labelled = out.type_labels != -100
    expected_loss = F.cross_entropy(type_logits[labelled], out.type_labels[labelled])
    assert math.isclose(out.type_loss.item(), expected_loss.item(), rel_tol=1e-5)


# ---------------------------------------------------------------- checkpoint


def test_checkpoint_round_trips_exactly(wm, tiny_tokenizer, src, tmp_path):
    folder = save_checkpoint(tmp_path / "wm", wm, tiny_tokenizer, meta={"family": "working_memory"})
    loaded = load_checkpoint(folder, "cpu")
    assert loaded.config == wm.config
    original, restored = wm.state_dict(), loaded.model.state_dict()
    assert original.keys() == restored.keys()
    assert all(torch.equal(original[k], restored[k]) for k in original)
    a = wm_generate(wm, src, seed=5, max_new_tokens=STEPS)
    b = wm_generate(loaded.model, src, seed=5, max_new_tokens=STEPS)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.types, b.types)
