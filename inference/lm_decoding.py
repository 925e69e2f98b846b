"""Text in and out of the language model: prompts framed as the model met
text in training, and greedy continuation.

In the training stream every article follows an EOS (training/lm_data.py),
so a prompt is [EOS] + its tokens: it reads as the start of an article.
The model has no key/value cache (it is small and its window short), so a
continuation re-runs the whole window per new token; interventions are
hooks held around the whole loop, as in the translation models' decoding.
"""

from __future__ import annotations

import torch

from inference.interventions import Interventions, applied_interventions
from inference.models.language_model import LanguageModel
from inference.tokenizer import TextTokenizer


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
    device = next(model.parameters()).device
    tokens = torch.tensor([prompt], dtype=torch.long, device=device)  # [1, t]
    new: list[int] = []
    with applied_interventions(model, interventions):
        while len(new) < max_new_tokens and tokens.shape[1] < c.max_positions:
            next_token = int(model(tokens)[0, -1].argmax())
            if next_token == c.eos_id:
                break
            new.append(next_token)
            tokens = torch.cat([tokens, tokens.new_tensor([[next_token]])], dim=1)
    return new
