"""Translation by the Memory Transformer family: greedy or beam search
through the shared loop (`inference.core.decoding.generate`), with a
key/value cache over the decoder's self- and cross-attention."""

from __future__ import annotations

import torch

from inference.core.applied_interventions import applied_interventions
from inference.core.decoding import GREEDY, BeamChooser, Decoding, GreedyChooser, generate
from inference.core.interventions import Interventions
from inference.families.memory_transformer.model import MemoryTransformer
from inference.layers import EncoderOutput


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


class _Step:
    """The decoder on the tokens so far: the last one against the cache, or all of them without one."""

    def __init__(self, model: MemoryTransformer, encoded: EncoderOutput, use_cache: bool):
        self.model, self.encoded = model, encoded
        self.cache = model.new_cache() if use_cache else None

    def __call__(self, tokens: torch.Tensor) -> torch.Tensor:  # [rows, t] -> next-token logits [rows, vocab]
        step_input = tokens[:, -1:] if self.cache is not None else tokens
        real = torch.ones_like(tokens, dtype=torch.bool)  # [rows, t] generated positions are never pad keys
        return self.model.decode(step_input, self.encoded, self.cache, tgt_key_mask=real)[:, -1]

    def reorder(self, order: torch.Tensor) -> None:
        """Follow beams to their new rows; cross-attention keys are identical
        within a source row, but reordering them keeps every row consistent."""
        if self.cache is None:  # nothing kept between steps: every step reads all the tokens, reordered by the loop
            return
        for layer in self.cache:
            for part in layer.values():
                for key in ("k", "v"):
                    part[key] = part[key][order]


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
    with applied_interventions(model, interventions) as memory_size:
        step = _Step(model, model.encode(src_ids, memory_size), use_cache)
        start = torch.full((src_ids.shape[0], 1), c.bos_id, dtype=torch.long, device=src_ids.device)  # [b, 1]
        tokens = generate(
            step,
            GreedyChooser(c.pad_id, c.eos_id),
            start,
            _budget(model, max_new_tokens),
            stop_when_finished=stop_at_eos,
        )
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
    b, device = src_ids.shape[0], src_ids.device
    with applied_interventions(model, interventions) as memory_size:
        encoded = model.encode(src_ids, memory_size)
        beams = torch.arange(b, device=device).repeat_interleave(beam_size)  # [b*k] source row of each beam
        step = _Step(model, EncoderOutput(encoded.states[beams], encoded.key_mask[beams], memory_size), use_cache=True)
        chooser = BeamChooser(b, beam_size, length_penalty, c.pad_id, c.eos_id, device)
        start = torch.full((b * beam_size, 1), c.bos_id, dtype=torch.long, device=device)  # [b*k, 1]
        tokens = generate(step, chooser, start, _budget(model, max_new_tokens), reorder=step.reorder)
    return chooser.best(tokens)[:, 1:]


def _budget(model: MemoryTransformer, max_new_tokens: int) -> int:
    return min(max_new_tokens, model.config.max_positions - 1)  # BOS takes position 0
