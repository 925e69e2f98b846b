from __future__ import annotations

import pytest
import torch

from inference.core.family import build_model
from inference.families.memory_transformer.growth import NEW_SLOT_NOISE_STD, grow_memory
from inference.families.memory_transformer.model import MemoryTransformerConfig


def tiny_model(memory_size: int, variant: str = "memtransformer"):
    torch.manual_seed(0)
    config = MemoryTransformerConfig(
        variant=variant,
        vocab_size=40,
        d_model=16,
        d_ff=32,
        n_heads=2,
        n_encoder_layers=2,
        n_decoder_layers=1,
        memory_size=memory_size,
    )
    return build_model(config)


@pytest.mark.parametrize("variant", ["memtransformer", "memctrl_shared"])
def test_growth_keeps_old_slots_and_cycles_them(variant):
    model = tiny_model(3, variant)
    grown = grow_memory(model, 8, seed=0)
    assert grown.config.memory_size == 8 and grown.memory.shape == (8, 16)
    torch.testing.assert_close(grown.memory[:3], model.memory, rtol=0, atol=0)
    for slot in range(3, 8):
        difference = grown.memory[slot] - model.memory[slot % 3]
        assert 0 < difference.abs().max() < 6 * NEW_SLOT_NOISE_STD  # a noisy copy of slot j mod m
    # Everything else is the trained model's.
    old = dict(model.named_parameters())
    for name, parameter in grown.named_parameters():
        if name != "memory":
            torch.testing.assert_close(parameter, old[name], rtol=0, atol=0, msg=name)


def test_copies_of_one_slot_differ():
    grown = grow_memory(tiny_model(2), 6, seed=0)
    assert not torch.equal(grown.memory[2], grown.memory[4])  # both copies of slot 0


def test_growth_must_grow():
    with pytest.raises(ValueError, match="must exceed"):
        grow_memory(tiny_model(4), 4, seed=0)
    with pytest.raises(ValueError, match="no memory"):
        grow_memory(tiny_model(0, "transformer"), 4, seed=0)
