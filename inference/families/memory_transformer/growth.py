"""Memory extension (the paper's Table 3): give a model trained with m
memory slots m' > m slots, then fine-tune it.

Slots 0..m-1 keep their trained vectors. A new slot j starts as trained slot
j mod m -- exactly the vector the model already uses for slot j when a
lesion runs it with more memory than trained (the model's memory_vectors),
so growth starts from a model whose behaviour is known -- plus small
N(0, 0.01^2) noise, so that copies of one slot can drift apart and
specialise during fine-tuning. The family's `warm_start` (family.py) grows a
checkpoint this way for the training loop.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from inference.core.family import build_model
from inference.families.memory_transformer.model import MemoryTransformer

NEW_SLOT_NOISE_STD = 0.01


def grow_memory(model: nn.Module, memory_size: int, seed: int) -> nn.Module:
    """A new model with `memory_size` slots and all other weights of `model`."""
    if not isinstance(model, MemoryTransformer):
        raise ValueError(f"only a Memory Transformer grows its memory, not a {type(model).__name__}")
    trained = model.config.memory_size
    if trained == 0:
        raise ValueError("the baseline transformer has no memory to grow")
    if memory_size <= trained:
        raise ValueError(f"grow_memory_to {memory_size} must exceed the trained memory size {trained}")
    grown = build_model(replace(model.config, memory_size=memory_size))
    state = model.state_dict()
    with torch.no_grad():
        memory = model.memory_vectors(memory_size).clone()  # [memory_size, d], slot j = trained slot j mod m
        generator = torch.Generator().manual_seed(seed)
        noise = (
            torch.randn(memory_size - trained, memory.shape[1], generator=generator) * NEW_SLOT_NOISE_STD
        )  # [new, d]
        memory[trained:] += noise.to(memory.device)
    state["memory"] = memory
    grown.load_state_dict(state)
    return grown.to(model.memory.device)
