"""Text in and out of the language model: prompts framed as the model met
text in training, and greedy continuation.

In the training stream every article follows an EOS (training/data/lm_streams.py),
so a prompt is [EOS] + its tokens: it reads as the start of an article.
The model has no key/value cache (it is small and its window short), so the
shared decoding loop re-runs the whole window per new token; interventions
are hooks held around the whole loop, as in the translation models'
decoding.
"""

from __future__ import annotations

import torch

from inference.core.applied_interventions import applied_interventions
from inference.core.decoding import GreedyChooser, generate, strip_after_eos
from inference.core.interventions import Interventions
from inference.core.tokenizer import TextTokenizer
from inference.families.language_model.model import LanguageModel


def prompt_ids(tokenizer: TextTokenizer, text: str) -> list[int]:
    """[EOS] + the tokens of `text`."""
    return [tokenizer.eos_id, *tokenizer.encode(text)]


@torch.no_grad()
def greedy_continuation(
    model: LanguageModel, prompt: list[int], max_new_tokens: int, interventions: Interventions | None = None
) -> list[int]:
    """The greedy next tokens after `prompt`, stopping at EOS (the end of the
    article, left out) or where the context window is full."""
    c = model.config
    start = torch.tensor([prompt], dtype=torch.long, device=next(model.parameters()).device)  # [1, t]
    budget = max(0, min(max_new_tokens, c.max_positions - len(prompt)))
    with applied_interventions(model, interventions):
        tokens = generate(lambda ids: model(ids)[:, -1], GreedyChooser(c.pad_id, c.eos_id), start, budget)
    return strip_after_eos(tokens[:, len(prompt) :].cpu(), c.eos_id)[0]
