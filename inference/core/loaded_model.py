"""A model ready to run: its weights on a device, its tokenizer and its records."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from inference.core.capabilities import FamilyConfig, config_of
from inference.core.tokenizer import TextTokenizer


@dataclass
class LoadedModel:
    """A model ready to run: weights on a device, its tokenizer and records."""

    name: str
    model: torch.nn.Module
    tokenizer: TextTokenizer
    meta: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)

    @property
    def config(self) -> FamilyConfig:
        return config_of(self.model)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device
