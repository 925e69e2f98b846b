"""The Recurrent Memory Transformer family (paper 002): memory tokens read and
written by every segment and handed to the next."""

from inference.core.family import register
from inference.families.recurrent_memory.family import FAMILY

register(FAMILY)
