"""Prompts framed as the language model met text in training: in the training stream every article follows an
EOS (training/data/lm_streams.py), so a prompt is [EOS] + its tokens and reads as the start of an article. Its
greedy continuation is the core's (inference/core/continuation.py)."""

from __future__ import annotations

from inference.core.tokenizer import TextTokenizer


def prompt_ids(tokenizer: TextTokenizer, text: str) -> list[int]:
    """[EOS] + the tokens of `text`."""
    return [tokenizer.eos_id, *tokenizer.encode(text)]
