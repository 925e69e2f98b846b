"""Model families. `build_model` turns a checkpoint's config into a model."""

from __future__ import annotations

from inference.models.memory_transformer import FAMILIES as MEMORY_TRANSFORMER_FAMILIES
from inference.models.memory_transformer import MemoryTransformer, MemoryTransformerConfig


def config_from_dict(values: dict) -> MemoryTransformerConfig:
    """Config from its JSON form; unknown or missing fields raise TypeError/ValueError."""
    family = values.get("family")
    if family in MEMORY_TRANSFORMER_FAMILIES:
        return MemoryTransformerConfig(**values)
    raise ValueError(f"unknown model family {family!r}")


def build_model(config: MemoryTransformerConfig) -> MemoryTransformer:
    return MemoryTransformer(config)
