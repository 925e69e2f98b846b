"""The active memory family (paper 001): Neural GPU, Markovian and Extended Neural GPU."""

from inference.core.family import register
from inference.families.active_memory.family import FAMILY

register(FAMILY)
