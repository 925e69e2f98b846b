"""The GRU + attention family: paper 001's attention baseline."""

from inference.core.family import register
from inference.families.gru_attention.family import FAMILY

register(FAMILY)
