"""The working-memory decoder family (paper 004): a translation decoder that
writes vocabulary tokens into its own input stream as working memory."""

from inference.core.family import register
from inference.families.working_memory.family import FAMILY

register(FAMILY)
