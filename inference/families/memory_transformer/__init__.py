"""The Memory Transformer family (paper 000): translation Transformers whose
encoder input is prefixed with learned [mem] vectors, and the baseline."""

from inference.core.family import register
from inference.families.memory_transformer.family import FAMILY

register(FAMILY)
