"""Batched greedy and beam-search decoding with a key/value cache.

Interventions apply during decoding exactly as in a traced run: they are
hooks registered around the whole loop, and the memory size is an input of
the encoder. `Decoding` names the method as data (what the command line and
a traced run accept); `decode` runs it.
"""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from inference.interventions import Interventions, applied_interventions
from inference.models.memory_transformer import EncoderOutput, MemoryTransformer


class Decoding(BaseModel):
    """How a translation model chooses its output tokens: `greedy` (the most
    likely token at every step) or `beam` search over `beam_size`
    hypotheses, ranked by log-probability / ((5 + length) / 6) **
    `length_penalty` (GNMT; 0 = no normalisation). Only the Memory
    Transformer families decode this way: a working-memory model samples
    its memory and the language model continues greedily."""

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


def decode(
    model: MemoryTransformer,
    src_ids: torch.Tensor,  # [b, n]
    decoding: Decoding = GREEDY,
    interventions: Interventions | None = None,
    max_new_tokens: int = 64,
) -> torch.Tensor:  # [b, steps] generated ids, EOS included, pad after it
    """The model's own output for each source, by `decoding`."""
    if decoding.method == "beam":
        return beam_search(model, src_ids, decoding.beam_size, interventions, max_new_tokens, decoding.length_penalty)
    return greedy_decode(model, src_ids, interventions, max_new_tokens)


def pad_batch(
    sequences: list[list[int]], pad_id: int, device: torch.device | str = "cpu"
) -> torch.Tensor:  # [b, max_len]
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


@torch.no_grad()
def greedy_decode(
    model: MemoryTransformer,
    src_ids: torch.Tensor,  # [b, n]
    interventions: Interventions | None = None,
    max_new_tokens: int = 64,
    use_cache: bool = True,
    stop_at_eos: bool = True,
) -> torch.Tensor:  # [b, steps] generated ids, EOS included, pad after it
    c = model.config
    max_new_tokens = min(max_new_tokens, c.max_positions - 1)  # BOS takes position 0
    with applied_interventions(model, interventions) as memory_size:
        encoded = model.encode(src_ids, memory_size)
        b = src_ids.shape[0]
        tokens = torch.full((b, 1), c.bos_id, dtype=torch.long, device=src_ids.device)  # [b, 1 + steps]
        finished = torch.zeros(b, dtype=torch.bool, device=src_ids.device)
        cache = model.new_cache() if use_cache else None
        for _ in range(max_new_tokens):
            step_input = tokens[:, -1:] if use_cache else tokens
            logits = model.decode(step_input, encoded, cache, tgt_key_mask=torch.ones_like(tokens, dtype=torch.bool))
            next_token = logits[:, -1].argmax(dim=-1)  # [b]
            next_token = next_token.masked_fill(finished, c.pad_id)
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            finished |= next_token == c.eos_id
            if stop_at_eos and finished.all():
                break
    return tokens[:, 1:]


@torch.no_grad()
def beam_search(
    model: MemoryTransformer,
    src_ids: torch.Tensor,  # [b, n]
    beam_size: int = 4,
    interventions: Interventions | None = None,
    max_new_tokens: int = 64,
    length_penalty: float = 0.6,
) -> torch.Tensor:  # [b, steps] best hypothesis per input, EOS included, pad after it
    """Beam search with GNMT length normalisation ((5 + len) / 6) ** alpha."""
    c = model.config
    max_new_tokens = min(max_new_tokens, c.max_positions - 1)  # BOS takes position 0
    b = src_ids.shape[0]
    device = src_ids.device
    with applied_interventions(model, interventions) as memory_size:
        encoded = model.encode(src_ids, memory_size)
        beams = torch.arange(b, device=device).repeat_interleave(beam_size)  # [b*k] source row of each beam
        encoded = EncoderOutput(encoded.states[beams], encoded.key_mask[beams], memory_size)
        tokens = torch.full((b * beam_size, 1), c.bos_id, dtype=torch.long, device=device)
        scores = torch.zeros(b, beam_size, device=device)
        scores[:, 1:] = float("-inf")  # all beams start identical: keep one
        finished = torch.zeros(b * beam_size, dtype=torch.bool, device=device)
        cache = model.new_cache()
        for _ in range(max_new_tokens):
            logits = model.decode(
                tokens[:, -1:], encoded, cache, tgt_key_mask=torch.ones_like(tokens, dtype=torch.bool)
            )
            log_probs = logits[:, -1].log_softmax(dim=-1)  # [b*k, vocab]
            # A finished beam may only extend itself with pad, at no cost.
            log_probs[finished] = float("-inf")
            log_probs[finished, c.pad_id] = 0.0
            vocab = log_probs.shape[-1]
            candidates = (scores.view(-1, 1) + log_probs).view(b, beam_size * vocab)  # [b, k*vocab]
            scores, flat = candidates.topk(beam_size, dim=-1)  # [b, k]
            origin = (flat // vocab + torch.arange(b, device=device)[:, None] * beam_size).view(-1)  # [b*k]
            next_token = (flat % vocab).view(-1, 1)
            tokens = torch.cat([tokens[origin], next_token], dim=1)
            finished = finished[origin] | (next_token.squeeze(1) == c.eos_id)
            reorder_cache(cache, origin)
            if finished.all():
                break
        lengths = ((tokens[:, 1:] != c.pad_id).sum(dim=1)).view(b, beam_size).float()
        normalised = scores / ((5 + lengths) / 6) ** length_penalty
        best = normalised.argmax(dim=-1) + torch.arange(b, device=device) * beam_size
    return tokens[best, 1:]


def reorder_cache(cache: list[dict], order: torch.Tensor) -> None:
    """Follow beams to their new rows; cross-attention keys are identical
    within a source row, but reordering them keeps every row consistent."""
    for layer in cache:
        for part in layer.values():
            for key in ("k", "v"):
                part[key] = part[key][order]
