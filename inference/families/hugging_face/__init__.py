"""Causal language models (GPT-2, GPT-NeoX, Llama) and encoder-decoder translators (Marian, T5) from Hugging Face,
opened from their `save_pretrained` folders and read through the hook points of MemLens's own language model and
translators (a FolderReader opens the folders); and a third family on the causal ones, recurrent memory added to
such a model the way paper 002's wrapper adds it (memory_model.py)."""

from inference.core.family import register
from inference.core.folders import register_folder_reader
from inference.families.hugging_face.family import FAMILY
from inference.families.hugging_face.folder import READER
from inference.families.hugging_face.memory_family import FAMILY as MEMORY_FAMILY
from inference.families.hugging_face.translator_family import FAMILY as TRANSLATOR_FAMILY

register(FAMILY)
register(MEMORY_FAMILY)
register(TRANSLATOR_FAMILY)
register_folder_reader(READER)
