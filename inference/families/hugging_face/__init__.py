"""Causal language models from Hugging Face (GPT-2, GPT-NeoX, Llama), opened from their `save_pretrained` folders
and read through the hook points of MemLens's own language model (a FolderReader opens the folders); and a second
family on them, recurrent memory added to such a model the way paper 002's wrapper adds it (memory_model.py)."""

from inference.core.family import register
from inference.core.folders import register_folder_reader
from inference.families.hugging_face.family import FAMILY
from inference.families.hugging_face.folder import READER
from inference.families.hugging_face.memory_family import FAMILY as MEMORY_FAMILY

register(FAMILY)
register(MEMORY_FAMILY)
register_folder_reader(READER)
