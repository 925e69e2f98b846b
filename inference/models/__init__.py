"""Model families. `build_model` turns a checkpoint's config into a model."""

from __future__ import annotations

from inference.models.language_model import FAMILY as LANGUAGE_MODEL_FAMILY
from inference.models.language_model import LanguageModel, LanguageModelConfig
from inference.models.memory_transformer import FAMILIES as MEMORY_TRANSFORMER_FAMILIES
from inference.models.memory_transformer import MemoryTransformer, MemoryTransformerConfig
from inference.models.working_memory import FAMILY as WORKING_MEMORY_FAMILY
from inference.models.working_memory import WorkingMemoryConfig, WorkingMemoryTransformer

ModelConfig = MemoryTransformerConfig | WorkingMemoryConfig | LanguageModelConfig
Model = MemoryTransformer | WorkingMemoryTransformer | LanguageModel


def config_from_dict(values: dict) -> ModelConfig:
    """Config from its JSON form; unknown or missing fields raise TypeError/ValueError."""
    family = values.get("family")
    if family in MEMORY_TRANSFORMER_FAMILIES:
        return MemoryTransformerConfig(**values)
    if family == WORKING_MEMORY_FAMILY:
        return WorkingMemoryConfig(**values)
    if family == LANGUAGE_MODEL_FAMILY:
        return LanguageModelConfig(**values)
    known = ", ".join([*MEMORY_TRANSFORMER_FAMILIES, WORKING_MEMORY_FAMILY, LANGUAGE_MODEL_FAMILY])
    raise ValueError(f"unknown family {family!r}; known: {known}")


def build_model(config: ModelConfig) -> Model:
    if isinstance(config, WorkingMemoryConfig):
        return WorkingMemoryTransformer(config)
    if isinstance(config, LanguageModelConfig):
        return LanguageModel(config)
    return MemoryTransformer(config)
