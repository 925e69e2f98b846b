"""The one autoregressive decoding loop, and the ways to choose a token.

`generate` runs any family that generates: the family supplies `step`, its
model on the tokens so far (the new one alone with a key/value cache, or
the whole prefix without), and a chooser turns the step's scores into the
next token per row. What differs between families is only in those two:

- greedy (`GreedyChooser`): the most likely token; a finished row gets pad;
- beam search (`BeamChooser`): k rows per input ranked by log-probability,
  rows reordered after every step (the family reorders its cache);
- a family's own chooser, e.g. the working-memory decoder's type head and
  nucleus sampling.

Every step runs inside `call_scope(position=i)`, so hooks captured during
decoding carry their decoding position. Interventions apply during
decoding exactly as in a traced run: the caller holds their hooks around
the loop. `Decoding` names greedy or beam as data (what the command line,
the app and a traced run accept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import torch
from pydantic import BaseModel, ConfigDict, Field

from inference.core.hooks import call_scope


class Decoding(BaseModel):
    """How a model chooses its output tokens: `greedy` (the most likely token
    at every step) or `beam` search over `beam_size` hypotheses, ranked by
    log-probability / ((5 + length) / 6) ** `length_penalty` (GNMT; 0 = no
    normalisation). Beam search applies to families with the beam_search
    capability."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Literal["greedy", "beam"] = "greedy"
    beam_size: int = Field(4, ge=1, le=8, description="hypotheses kept per input (beam only)")
    length_penalty: float = Field(
        0.6, ge=0.0, le=2.0, allow_inf_nan=False, description="GNMT length normalisation exponent (beam only)"
    )

    @property
    def label(self) -> str:
        """In words, e.g. "greedy" or "beam 4, length penalty 0.6"."""
        if self.method == "greedy":
            return "greedy"
        return f"beam {self.beam_size}, length penalty {self.length_penalty:g}"


GREEDY = Decoding()
MAX_NEW_TOKENS = 128  # the longest output decoded unless a caller asks for another (the app's default budget)
CONTINUATION_TOKENS = 24  # a language model's greedy continuation on a page unless the reader asks for more


@dataclass
class Choice:
    tokens: torch.Tensor  # [rows] the next token of every row
    ended: torch.Tensor  # [rows] bool: rows this token finishes
    order: torch.Tensor | None = None  # [rows] beams: the row each new row continues; None = same rows


class Chooser(Protocol):
    def __call__(self, scores: Any, finished: torch.Tensor, /) -> Choice:
        """scores: what the family's step returned; finished: [rows] bool, rows already done."""
        ...


@torch.no_grad()
def generate(
    step: Callable[[torch.Tensor], Any],
    choose: Chooser,
    start: torch.Tensor,  # [rows, s] the tokens decoding starts from (BOS, or a prompt)
    max_new_tokens: int,
    reorder: Callable[[torch.Tensor], None] | None = None,
    stop_when_finished: bool = True,
) -> torch.Tensor:  # [rows, s + steps]
    """Append up to `max_new_tokens` tokens to every row: `step(tokens)` scores
    the next token given the tokens so far, `choose` picks it. Stops when
    every row has finished (unless `stop_when_finished` is False: a fixed
    number of steps, for timing). `reorder(order)` follows beams."""
    tokens = start
    finished = torch.zeros(start.shape[0], dtype=torch.bool, device=start.device)
    for position in range(max_new_tokens):
        with call_scope(position=position):
            choice = choose(step(tokens), finished)
        if choice.order is not None:
            tokens, finished = tokens[choice.order], finished[choice.order]
            if reorder is not None:
                reorder(choice.order)
        tokens = torch.cat([tokens, choice.tokens[:, None]], dim=1)
        finished = finished | choice.ended
        if stop_when_finished and finished.all():
            break
    return tokens


@dataclass
class GreedyChooser:
    """The most likely token; pad once a row has said EOS."""

    pad_id: int
    eos_id: int

    def __call__(self, logits: torch.Tensor, finished: torch.Tensor) -> Choice:  # logits [rows, vocab]
        tokens = logits.argmax(dim=-1).masked_fill(finished, self.pad_id)  # [rows]
        return Choice(tokens, tokens == self.eos_id)


class BeamChooser:
    """Beam search over rows grouped by input (`beam_size` consecutive rows
    per input), GNMT length normalisation ((5 + len) / 6) ** alpha at the end."""

    def __init__(self, batch: int, beam_size: int, length_penalty: float, pad_id: int, eos_id: int, device):
        self.batch, self.beam_size, self.length_penalty = batch, beam_size, length_penalty
        self.pad_id, self.eos_id = pad_id, eos_id
        self.scores = torch.zeros(batch, beam_size, device=device)  # [b, k] log-probability of every beam
        self.scores[:, 1:] = float("-inf")  # all beams start identical: keep one

    def __call__(self, logits: torch.Tensor, finished: torch.Tensor) -> Choice:  # logits [b*k, vocab]
        b, k = self.batch, self.beam_size
        log_probs = logits.log_softmax(dim=-1)  # [b*k, vocab]
        # A finished beam may only extend itself with pad, at no cost.
        log_probs[finished] = float("-inf")
        log_probs[finished, self.pad_id] = 0.0
        vocab = log_probs.shape[-1]
        candidates = (self.scores.view(-1, 1) + log_probs).view(b, k * vocab)  # [b, k*vocab]
        self.scores, flat = candidates.topk(k, dim=-1)  # [b, k]
        order = (flat // vocab + torch.arange(b, device=flat.device)[:, None] * k).view(-1)  # [b*k]
        tokens = (flat % vocab).view(-1)  # [b*k]
        return Choice(tokens, tokens == self.eos_id, order)

    def best(self, tokens: torch.Tensor) -> torch.Tensor:  # [b*k, 1+steps] -> [b, 1+steps]
        """The best hypothesis of every input by length-normalised score."""
        b, k = self.batch, self.beam_size
        lengths = (tokens[:, 1:] != self.pad_id).sum(dim=1).view(b, k).float()
        normalised = self.scores / ((5 + lengths) / 6) ** self.length_penalty
        return tokens[normalised.argmax(dim=-1) + torch.arange(b, device=tokens.device) * k]


def pad_batch(sequences: list[list[int]], pad_id: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Right-padded [b, max_len] ids."""
    width = max((len(s) for s in sequences), default=0)
    batch = torch.full((len(sequences), max(width, 1)), pad_id, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        batch[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    return batch.to(device)


def strip_after_eos(ids: torch.Tensor, eos_id: int) -> list[list[int]]:
    """[b, t] generated ids -> per-row lists ending before the first EOS."""
    rows = []
    for row in ids.tolist():
        rows.append(row[: row.index(eos_id)] if eos_id in row else row)
    return rows
