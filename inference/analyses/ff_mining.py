"""Trigger examples of feed-forward keys (Geva et al., paper 003, Section 3):
for every layer and key, the prefixes of a corpus with the largest key
coefficient m_i, at most one per sentence (a sentence's prefix where m_i
peaks), kept as a running top-k while the corpus streams through.

A corpus is a list of texts, each read as a stream of tokens
(`prefix_stream`): the prefix ending at position p is stream[:p+1] and its
next token stream[p+1]. For a translation decoder a text is a target,
teacher-forced after its source: the stream is [BOS] + target + [EOS], the
decoder input its first len - 1 tokens. For the language model a text is a
corpus sentence read as an article's start: [EOS] + sentence; its last
token has no known next token, so no prefix ends there.

`MiningState` is saved with torch.save and loads with weights_only=True, so
a long corpus can be mined in sessions (inference/runs/trigger_mining.py
runs the model over the corpus). `compact_triggers` there turns a state
into the bounded JSON record stored beside a checkpoint; `TriggerStore`
here reads it back, so that the app shows trigger examples without the
corpus. Everything in this module is a pure function of tensors.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

STATE_FORMAT = 1
COMPACT_FORMAT = "memlens.ff_triggers.v1"
NO_TOKEN = 0xFFFF  # left padding of a stored context shorter than context_tokens


@dataclass
class MiningState:
    """Running top-k trigger examples per layer and key, best first.
    A slot that no sentence filled yet holds coefficient -inf, sentence -1."""

    top_k: int
    sentences_consumed: int  # corpus sentences 0..sentences_consumed-1 are in
    coefficients: dict[str, torch.Tensor]  # layer -> [d_ff, top_k] float, the key's peak coefficient in that sentence
    sentences: dict[str, torch.Tensor]  # layer -> [d_ff, top_k] long, index of the sentence in the corpus
    positions: dict[str, torch.Tensor]  # layer -> [d_ff, top_k] long, decoder position where the prefix ends

    @classmethod
    def empty(cls, key_counts: dict[str, int], top_k: int) -> MiningState:
        """key_counts: FF layer name -> d_ff."""
        return cls(
            top_k,
            0,
            {layer: torch.full((n, top_k), float("-inf")) for layer, n in key_counts.items()},
            {layer: torch.full((n, top_k), -1, dtype=torch.long) for layer, n in key_counts.items()},
            {layer: torch.full((n, top_k), -1, dtype=torch.long) for layer, n in key_counts.items()},
        )

    def save(self, path: str | Path) -> None:
        record = {
            "format": STATE_FORMAT,
            "top_k": self.top_k,
            "sentences_consumed": self.sentences_consumed,
            "coefficients": self.coefficients,
            "sentences": self.sentences,
            "positions": self.positions,
        }
        torch.save(record, path)

    @classmethod
    def load(cls, path: str | Path) -> MiningState:
        record = torch.load(path, map_location="cpu", weights_only=True)
        if record.get("format") != STATE_FORMAT:
            raise ValueError(f"{path}: mining state format {record.get('format')!r}, expected {STATE_FORMAT}")
        return cls(
            record["top_k"],
            record["sentences_consumed"],
            record["coefficients"],
            record["sentences"],
            record["positions"],
        )


def add_batch(
    state: MiningState, keys: dict[str, torch.Tensor], lengths: Sequence[int], first: int | None = None
) -> MiningState:
    """The state after the next len(lengths) corpus sentences: sentences first, first + 1, ... of the corpus
    (first: state.sentences_consumed, by default; a shard of a corpus mined on several workers starts elsewhere).

    keys: layer -> [b, t, d_ff] coefficients of the batch; lengths: the real
    positions of each sentence (the rest is padding). Each sentence offers
    one candidate per key, its peak, so no sentence enters a key's list
    twice. Candidates are merged with a stable sort rather than topk: many
    ReLU keys tie at 0, and the stable order breaks ties towards earlier
    sentences, so which sentence a key keeps never depends on how the
    corpus was split into batches and sessions.
    """
    b = len(lengths)
    real = torch.arange(next(iter(keys.values())).shape[1])[None, :] < torch.tensor(lengths)[:, None]  # [b, t]
    first = state.sentences_consumed if first is None else first
    batch_sentences = torch.arange(first, first + b)  # [b]
    coefficients, sentences, positions = {}, {}, {}
    for layer, batch_keys in keys.items():
        masked = batch_keys.float().masked_fill(~real[:, :, None], float("-inf"))  # [b, t, d_ff]
        peak, peak_position = masked.max(dim=1)  # [b, d_ff] each
        d_ff = peak.shape[1]
        candidate_coefficients = torch.cat([state.coefficients[layer], peak.T], dim=1)  # [d_ff, top_k + b]
        candidate_sentences = torch.cat([state.sentences[layer], batch_sentences.expand(d_ff, b)], dim=1)
        candidate_positions = torch.cat([state.positions[layer], peak_position.T], dim=1)
        order = candidate_coefficients.sort(dim=1, descending=True, stable=True).indices[
            :, : state.top_k
        ]  # [d_ff, top_k]
        coefficients[layer] = candidate_coefficients.gather(1, order)
        sentences[layer] = candidate_sentences.gather(1, order)
        positions[layer] = candidate_positions.gather(1, order)
    return MiningState(state.top_k, state.sentences_consumed + b, coefficients, sentences, positions)


def merge_states(earlier: MiningState, later: MiningState) -> MiningState:
    """The top-k of two states of disjoint sentences (say, two shards of a corpus), exactly as one state that had
    read both: candidates in a total order, coefficient descending, then sentence ascending (the order add_batch
    keeps: a tie goes to the earlier sentence; a key keeps one prefix per sentence, so no tie is left)."""
    coefficients, sentences, positions = {}, {}, {}
    for layer in earlier.coefficients:
        candidate_coefficients = torch.cat([earlier.coefficients[layer], later.coefficients[layer]], dim=1)
        candidate_sentences = torch.cat([earlier.sentences[layer], later.sentences[layer]], dim=1)  # [d_ff, 2 top_k]
        candidate_positions = torch.cat([earlier.positions[layer], later.positions[layer]], dim=1)
        by_sentence = candidate_sentences.sort(dim=1, stable=True).indices
        by_coefficient = candidate_coefficients.gather(1, by_sentence).sort(dim=1, descending=True, stable=True).indices
        order = by_sentence.gather(1, by_coefficient)[:, : earlier.top_k]  # [d_ff, top_k]
        coefficients[layer] = candidate_coefficients.gather(1, order)
        sentences[layer] = candidate_sentences.gather(1, order)
        positions[layer] = candidate_positions.gather(1, order)
    consumed = earlier.sentences_consumed + later.sentences_consumed
    return MiningState(earlier.top_k, consumed, coefficients, sentences, positions)


@dataclass
class TriggerTokens:
    """One layer's trigger examples as the tokens the agreement reads.
    A trigger is an entry whose coefficient is positive (the key fired);
    slots without one hold -1."""

    trigger: torch.Tensor  # [d_ff, top_k] long, the prefix's last token (at the trigger position), best first
    next: torch.Tensor  # [d_ff, top_k] long, the token after the prefix; next[i, 0] is the paper's w_i


def encode_array(tensor: torch.Tensor, dtype: str) -> dict:
    array = tensor.detach().cpu().numpy().astype(dtype)
    return {"dtype": dtype, "shape": list(array.shape), "base64": base64.b64encode(array.tobytes()).decode("ascii")}


def decode_array(record: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(record["base64"]), dtype=record["dtype"]).reshape(record["shape"])


@dataclass
class StoredTrigger:
    context: list[str]  # display tokens of the prefix's end; the last one is the trigger token
    next_token: str
    coefficient: float
    sentence: int
    position: int
    truncated: bool  # the prefix is longer than the stored context


class TriggerStore:
    """A compact record, decoded once: the app reads it key by key."""

    def __init__(self, compact: dict):
        if compact.get("format") != COMPACT_FORMAT:
            raise ValueError(f"trigger record format {compact.get('format')!r}, expected {COMPACT_FORMAT}")
        self.top_k = compact["top_k"]
        self.context_tokens = compact["context_tokens"]
        self.sentences_consumed = compact["sentences_consumed"]
        self.vocabulary_ids = torch.tensor(compact["vocabulary"]["ids"], dtype=torch.long)  # local index -> token id
        self.vocabulary_tokens = compact["vocabulary"]["tokens"]
        self.arrays = {
            layer: {
                name: decode_array(record[name])
                for name in ("counts", "coefficients", "sentences", "positions", "tokens")
            }
            for layer, record in compact["layers"].items()
        }
        self._trigger_tokens = self._decode_trigger_tokens()  # every key-browser page ranks keys by them

    @property
    def layers(self) -> list[str]:
        return list(self.arrays)

    def _rows(self, layer: str) -> np.ndarray:  # [d_ff + 1] where each key's rows start
        counts = self.arrays[layer]["counts"].astype(np.int64)
        return np.concatenate([[0], np.cumsum(counts)])

    def triggers(self, layer: str, key: int) -> list[StoredTrigger]:
        """The trigger examples of one key, best first."""
        arrays = self.arrays[layer]
        starts = self._rows(layer)
        rows = slice(int(starts[key]), int(starts[key + 1]))
        return [
            StoredTrigger(
                [self.vocabulary_tokens[t] for t in tokens[:-1] if t != NO_TOKEN],
                self.vocabulary_tokens[tokens[-1]],
                float(coefficient),
                int(sentence),
                int(position),
                int(position) + 1 > self.context_tokens,
            )
            for tokens, coefficient, sentence, position in zip(
                arrays["tokens"][rows],
                arrays["coefficients"][rows],
                arrays["sentences"][rows],
                arrays["positions"][rows],
            )
        ]

    def top_coefficients(self, layer: str) -> torch.Tensor:  # [d_ff]
        """Each key's largest coefficient on the corpus; -inf for a key that never fired."""
        arrays = self.arrays[layer]
        counts = torch.from_numpy(arrays["counts"].astype(np.int64))
        first = torch.from_numpy(self._rows(layer)[:-1])
        top = torch.full(counts.shape, float("-inf"))
        fired = counts > 0
        top[fired] = torch.from_numpy(arrays["coefficients"].astype(np.float32))[first[fired]]
        return top

    def trigger_tokens(self) -> dict[str, TriggerTokens]:
        """TriggerTokens of every layer: the agreement without the corpus."""
        return self._trigger_tokens

    def _decode_trigger_tokens(self) -> dict[str, TriggerTokens]:
        result = {}
        for layer, arrays in self.arrays.items():
            counts = torch.from_numpy(arrays["counts"].astype(np.int64))  # [d_ff]
            tokens = torch.from_numpy(arrays["tokens"].astype(np.int64))  # [n, context_tokens + 1]
            filled = torch.arange(self.top_k)[None, :] < counts[:, None]  # [d_ff, top_k]
            trigger = torch.full(filled.shape, -1, dtype=torch.long)
            following = torch.full(filled.shape, -1, dtype=torch.long)
            trigger[filled] = self.vocabulary_ids[tokens[:, -2]]  # the trigger token: the context's last, never padding
            following[filled] = self.vocabulary_ids[tokens[:, -1]]
            result[layer] = TriggerTokens(trigger, following)
        return result
