"""Tiny random Hugging Face causal language models in `save_pretrained` folders, with a word-level tokenizer saved as
tokenizer.json beside them: built offline and seeded, for the Hugging Face family's tests.

    build_folder("gpt2", folder)      GPT-2: one id for BOS and EOS, no pad id (as the real GPT-2)
    build_folder("gpt_neox", folder)  GPT-NeoX, sequential residual (use_parallel_residual False)
    build_folder("llama", folder)     Llama, 4 query heads sharing 2 key/value heads

and encoder-decoder translators, each decoding from the pad token (as the real ones):

    build_folder("t5", folder)        T5: pre-LN RMS norms, relative positions, ReLU FF, tied embeddings
    build_folder("marian", folder)    Marian: post-LN, sinusoidal positions, scaled embeddings, a final logits bias

Every model: 2 layers (a translator: 2 + 2), d_model 32, 4 heads, 64 FF keys, 100 tokens, 64 positions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach the network (transformers is imported below)

PAD, EOS, UNK, BOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "</s>", "<unk>", "<s>"]
WORDS = (
    "the a an of to in is was and on at for with by from that this it he she they we you i "
    "cat dog bird fish house car tree city river king queen man woman boy girl child mother "
    "father friend teacher doctor paris london berlin rome france germany italy england "
    "red blue green big small old new good bad happy sad fast slow hot cold one two three four "
    "five six seven eight nine ten run walk eat drink see go come went saw ate said has have "
    "had be are were not"
).split()
VOCAB_SIZE = 100
VOCAB = {token: i for i, token in enumerate((SPECIALS + WORDS)[:VOCAB_SIZE])}
N_LAYERS, N_HEADS, N_KV_HEADS, D_MODEL, D_FF, MAX_POSITIONS = 2, 4, 2, 32, 64, 64
INIT_STD = 0.2  # larger than the usual 0.02, so that edits move the logits visibly and greedy choices are clear
ARCHITECTURES = ("gpt2", "gpt_neox", "llama")
TRANSLATORS = ("t5", "marian")


def word_tokenizer() -> Tokenizer:
    """Words split at whitespace, one id each (unknown words: <unk>); decoding joins them with spaces."""
    tokenizer = Tokenizer(models.WordLevel(vocab=VOCAB, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    tokenizer.add_special_tokens(SPECIALS)
    return tokenizer


BYTE_LEVEL_TEXT = (
    'The king said: "Paris – not London."\nA naïve café in Köln serves crème brûlée.\n\tThe queen ate 3 figs.\n'
    "Der Hund läuft über die Straße; 中文 ist schwer."
)
BYTE_LEVEL_VOCAB = 300  # the 256 bytes, the four specials, and 40 merges


def byte_level_tokenizer() -> Tokenizer:
    """A byte-level BPE (GPT-2's scheme: every byte a character of its alphabet, "Ġ" a space, "Ċ" a newline) trained
    on BYTE_LEVEL_TEXT, the SPECIALS at ids 0 to 3, and "<|im_start|>" added whole, as chat models add it."""
    from tokenizers import AddedToken, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BYTE_LEVEL_VOCAB - 1,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(BYTE_LEVEL_TEXT.splitlines(keepends=True), trainer=trainer)
    tokenizer.add_special_tokens([AddedToken("<|im_start|>", special=True)])
    return tokenizer


def hf_config(arch: str, **overrides: Any):
    """The transformers config of a tiny model of `arch`."""
    from transformers import GPT2Config, GPTNeoXConfig, LlamaConfig, MarianConfig, T5Config

    if arch == "gpt2":
        values: dict[str, Any] = dict(
            vocab_size=VOCAB_SIZE,
            n_positions=MAX_POSITIONS,
            n_embd=D_MODEL,
            n_layer=N_LAYERS,
            n_head=N_HEADS,
            n_inner=D_FF,
            bos_token_id=EOS,
            eos_token_id=EOS,
            pad_token_id=None,
            initializer_range=INIT_STD,
        )
        return GPT2Config(**{**values, **overrides})
    common: dict[str, Any] = dict(
        vocab_size=VOCAB_SIZE,
        hidden_size=D_MODEL,
        num_hidden_layers=N_LAYERS,
        num_attention_heads=N_HEADS,
        intermediate_size=D_FF,
        max_position_embeddings=MAX_POSITIONS,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        initializer_range=INIT_STD,
    )
    translator: dict[str, Any] = dict(
        vocab_size=VOCAB_SIZE, d_model=D_MODEL, pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD
    )
    if arch == "t5":
        values = dict(num_layers=N_LAYERS, num_decoder_layers=N_LAYERS, num_heads=N_HEADS, d_kv=D_MODEL // N_HEADS)
        values |= dict(d_ff=D_FF)
        return T5Config(**{**translator, **values, **overrides})
    if arch == "marian":
        values = dict(encoder_layers=N_LAYERS, decoder_layers=N_LAYERS, encoder_attention_heads=N_HEADS)
        values |= dict(decoder_attention_heads=N_HEADS, encoder_ffn_dim=D_FF, decoder_ffn_dim=D_FF)
        values |= dict(max_position_embeddings=MAX_POSITIONS, init_std=INIT_STD)
        return MarianConfig(**{**translator, **values, **overrides})
    if arch == "gpt_neox":
        return GPTNeoXConfig(**{**common, "use_parallel_residual": False, **overrides})
    if arch == "llama":
        return LlamaConfig(**{**common, "num_key_value_heads": N_KV_HEADS, **overrides})
    raise ValueError(f"no tiny {arch!r}; built: {', '.join(ARCHITECTURES + TRANSLATORS)}")


def build_folder(
    arch: str, folder: Path, seed: int = 0, tokenizer: bool = True, byte_level: bool = False, **overrides: Any
) -> Path:
    """A tiny random model of `arch` saved in `folder` (config.json, model.safetensors, generation_config.json) with
    tokenizer.json (unless `tokenizer` is False): the word tokenizer, or with `byte_level` a byte-level BPE (and a
    vocabulary of its size); `overrides` change its config."""
    if byte_level:
        overrides = {"vocab_size": byte_level_tokenizer().get_vocab_size(), **overrides}
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    torch.manual_seed(seed)
    auto = AutoModelForSeq2SeqLM if arch in TRANSLATORS else AutoModelForCausalLM
    model = auto.from_config(hf_config(arch, **overrides), attn_implementation="eager").eval()
    if arch == "marian":  # a bias that is not zero, so that a reading that leaves it out shows
        model.final_logits_bias.normal_(0.0, 1.0)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    if tokenizer:
        (byte_level_tokenizer() if byte_level else word_tokenizer()).save(str(folder / "tokenizer.json"))
    return folder


def unsupported_folder(folder: Path, model_type: str = "bloom") -> Path:
    """A folder whose config.json names a model type MemLens does not read (a small BLOOM-like config), with a
    tokenizer and a stand-in weights file."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model_type": model_type, "n_layer": N_LAYERS, "n_head": N_HEADS, "hidden_size": D_MODEL}
    config |= {"vocab_size": VOCAB_SIZE, "architectures": ["BloomForCausalLM"]}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (folder / "model.safetensors").write_bytes(b"")
    word_tokenizer().save(str(folder / "tokenizer.json"))
    return folder
