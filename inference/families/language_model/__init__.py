"""The decoder-only language model family (FF layers as key-value memories, paper 003)."""

from inference.core.family import register
from inference.families.language_model.family import FAMILY

register(FAMILY)
