"""Causal language models from Hugging Face (GPT-2, GPT-NeoX, Llama), opened from their `save_pretrained` folders
and read through the hook points of MemLens's own language model (a FolderReader opens the folders)."""

from inference.core.family import register
from inference.core.folders import register_folder_reader
from inference.families.hugging_face.family import FAMILY
from inference.families.hugging_face.folder import READER

register(FAMILY)
register_folder_reader(READER)
