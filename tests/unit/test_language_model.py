"""The decoder-only language model: causal, hook points with their shapes,
an additive pre-LN residual stream, padding that changes nothing, and a
checkpoint that round-trips through the registry."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from inference.core.axes import TokenAxis
from inference.core.checkpoint import CheckpointRegistry, load_checkpoint, save_checkpoint
from inference.core.family import config_from_dict
from inference.core.hooks import hook_points, registered_hooks
from inference.core.trace import Role
from inference.core.tracing import token_roles
from inference.families.language_model.model import LanguageModel, LanguageModelConfig
from tests.conftest import make_tiny_language_model


@pytest.fixture
def model(tiny_tokenizer) -> LanguageModel:
    return make_tiny_language_model(tiny_tokenizer)


def random_ids(model: LanguageModel, b: int, t: int) -> torch.Tensor:  # [b, t], no special tokens
    return torch.randint(4, model.config.vocab_size, (b, t), generator=torch.Generator().manual_seed(1))


def test_changing_a_later_token_leaves_earlier_logits_unchanged(model):
    ids = random_ids(model, 2, 10)
    changed = ids.clone()
    changed[:, 6] = (changed[:, 6] + 1 - 4) % (model.config.vocab_size - 4) + 4
    before, after = model(ids), model(changed)
    torch.testing.assert_close(after[:, :6], before[:, :6], rtol=0, atol=0)
    assert not torch.allclose(after[:, 6:], before[:, 6:])


def test_hook_points_have_their_declared_shapes(model):
    b, t, c = 2, 7, model.config
    captured = {}
    names = list(hook_points(model))
    with registered_hooks(model, [(name, lambda x, point: captured.__setitem__(point.name, x)) for name in names]):
        logits = model(random_ids(model, b, t))
    d_head = c.d_model // c.n_heads
    expected = {}
    for i in range(c.n_layers):
        expected |= {
            f"layers.{i}.attn.mask": (b, 1, t, t),
            f"layers.{i}.attn.pattern": (b, c.n_heads, t, t),
            f"layers.{i}.attn.z": (b, c.n_heads, t, d_head),
            f"layers.{i}.resid_mid": (b, t, c.d_model),
            f"layers.{i}.ff.keys": (b, t, c.d_ff),
            f"layers.{i}.ff.out": (b, t, c.d_model),
        }
    expected |= {"out": (b, t, c.d_model), "logits": (b, t, c.vocab_size)}
    assert names == list(expected)
    assert {name: tuple(x.shape) for name, x in captured.items()} == expected
    assert all(
        hook_points(model)[f"layers.{i}.attn.pattern"].positions == {"query": TokenAxis("tok"), "key": TokenAxis("tok")}
        for i in range(c.n_layers)
    )
    assert all((captured[f"layers.{i}.ff.keys"] >= 0).all() for i in range(c.n_layers))  # ReLU coefficients
    pattern = captured["layers.0.attn.pattern"]
    assert torch.allclose(pattern.sum(-1), torch.ones(b, c.n_heads, t))
    assert (pattern.triu(diagonal=1) == 0).all()  # no query sees a later key
    torch.testing.assert_close(captured["logits"], logits)


def test_traced_attention_path_gives_the_fast_path_logits(model):
    ids = random_ids(model, 2, 9)
    fast = model(ids)
    with registered_hooks(
        model, [(f"layers.{i}.attn.pattern", lambda x, point: None) for i in range(model.config.n_layers)]
    ):
        traced = model(ids)
    torch.testing.assert_close(traced, fast, rtol=1e-5, atol=1e-5)


def test_residual_stream_is_a_sum_read_through_the_final_norm(model):
    """Pre-LN: the last layer's output is resid_mid + ff.out, and the logits are final_norm of it times E."""
    captured = {}
    last = model.config.n_layers - 1
    hooks = [
        (name, lambda x, point: captured.__setitem__(point.name, x))
        for name in (f"layers.{last}.resid_mid", f"layers.{last}.ff.out")
    ]
    ids = random_ids(model, 2, 6)
    with registered_hooks(model, hooks):
        logits = model(ids)
    stream = captured[f"layers.{last}.resid_mid"] + captured[f"layers.{last}.ff.out"]
    torch.testing.assert_close(F.linear(model.final_norm(stream), model.embed.weight), logits)


def test_padding_after_a_sentence_changes_none_of_its_logits(model):
    ids = random_ids(model, 1, 5)
    padded = torch.cat([ids, torch.full((1, 3), model.config.pad_id)], dim=1)
    torch.testing.assert_close(model(padded)[:, :5], model(ids), rtol=1e-5, atol=1e-6)


def test_token_roles(model):
    c = model.config
    ids = torch.tensor([[c.eos_id, 10, 11, c.pad_id]])
    assert token_roles(ids.tolist(), c, Role.TEXT) == [["special", "text", "text", "pad"]]


def test_config_is_checked():
    assert isinstance(config_from_dict({"family": "language_model", "vocab_size": 50}), LanguageModelConfig)
    with pytest.raises(ValueError, match="divisible"):
        LanguageModelConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="family"):
        LanguageModelConfig(family="transformer")
    assert LanguageModelConfig().max_memory_size == LanguageModelConfig().memory_size == 0


def test_checkpoint_round_trips_through_the_registry(model, tiny_tokenizer, tmp_path):
    save_checkpoint(
        tmp_path / "lm",
        model,
        tiny_tokenizer,
        meta={"family": "language_model"},
        metrics={"perplexity": {"wikitext2_test": 99.0}},
    )
    loaded = load_checkpoint(tmp_path / "lm", "cpu")
    assert loaded.config == model.config and isinstance(loaded.model, LanguageModel)
    ids = random_ids(model, 2, 8)
    torch.testing.assert_close(loaded.model(ids), model(ids), rtol=0, atol=0)

    registry = CheckpointRegistry(tmp_path, device="cpu")
    assert registry.available() == ["lm"]
    assert registry.entries["lm"].metrics.perplexity == {"wikitext2_test": 99.0}
    assert registry.get("lm").config.family == "language_model"
