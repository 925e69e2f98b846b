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
a long corpus can be mined in sessions. `compact_triggers` turns a state
into the bounded JSON record stored beside a checkpoint, so that the app
shows trigger examples without the corpus.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from inference.analyses.ff_values import ff_memories
from inference.core.checkpoint import LoadedModel
from inference.core.trace import Trace, run_with_trace
from inference.families.language_model.continuation import prompt_ids
from inference.families.language_model.model import LanguageModel

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


def add_batch(state: MiningState, keys: dict[str, torch.Tensor], lengths: Sequence[int]) -> MiningState:
    """The state after the next len(lengths) corpus sentences.

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
    batch_sentences = torch.arange(state.sentences_consumed, state.sentences_consumed + b)  # [b]
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


def mine_triggers(
    loaded: LoadedModel,
    texts: Sequence[str],
    sources: Sequence[str] | None = None,
    state: MiningState | None = None,
    batch_size: int = 32,
    top_k: int = 50,
    on_batch: Callable[[MiningState], None] | None = None,
) -> MiningState:
    """Trigger examples of every FF key (ff_values.ff_memories: the language
    model's layers or a translation decoder's) over a corpus of texts;
    `sources` (a translation model's, one per text) are what the decoder is
    teacher-forced after.

    Sentence indices are positions in `texts`. To resume, pass the same
    corpus and a saved state: mining goes on from state.sentences_consumed
    (top_k only sizes a new state). on_batch sees the state after every
    batch (e.g. to save it and report progress).
    """
    layers = ff_memories(loaded.model).layers
    if state is None:
        state = MiningState.empty(
            {layer: loaded.model.get_submodule(layer).w_in.out_features for layer in layers}, top_k
        )
    if list(state.coefficients) != layers:
        raise ValueError(f"the state holds layers {list(state.coefficients)}; the model has {layers}")
    if state.sentences_consumed > len(texts):
        raise ValueError(f"the state has consumed {state.sentences_consumed} sentences; the corpus has {len(texts)}")
    for start in range(state.sentences_consumed, len(texts), batch_size):
        batch = slice(start, start + batch_size)
        lengths = [len(prefix_stream(loaded, text)) - 1 for text in texts[batch]]
        # No name holds the batch's keys: they are freed before the next batch runs.
        state = add_batch(
            state,
            _batch_keys(loaded, list(texts[batch]), None if sources is None else list(sources[batch]), layers),
            lengths,
        )
        if on_batch is not None:
            on_batch(state)
    return state


def _batch_keys(
    loaded: LoadedModel, texts: list[str], sources: list[str] | None, layers: list[str]
) -> dict[str, torch.Tensor]:
    """layer -> key coefficients [b, t, d_ff] of one batch. Only these leave:
    the trace's logits ([b, t, vocab], the largest tensor of a batch) are
    freed at once, not kept alive while the next batch runs."""
    trace = trace_texts(loaded, texts, sources, [f"{layer}.keys" for layer in layers])
    return {layer: trace.tensor(f"{layer}.keys") for layer in layers}


def trace_texts(loaded: LoadedModel, texts: list[str], sources: list[str] | None, names: list[str]) -> Trace:
    """One pass over corpus texts as their streams read them (module doc):
    the language model on each text, a translation decoder teacher-forced on
    each text after its source."""
    if isinstance(loaded.model, LanguageModel):
        return run_with_trace(loaded, texts, names=names, max_new_tokens=0)
    if sources is None:
        raise ValueError("a translation model's decoder is mined on (source, target) pairs: give the sources")
    return run_with_trace(loaded, sources, texts, names=names)


def prefix_stream(loaded: LoadedModel, text: str) -> list[int]:
    """The token stream of one corpus text (module doc)."""
    tokenizer = loaded.tokenizer
    if isinstance(loaded.model, LanguageModel):
        return prompt_ids(tokenizer, text)
    return [tokenizer.bos_id, *tokenizer.encode(text), tokenizer.eos_id]


@dataclass
class TriggerTokens:
    """One layer's trigger examples as the tokens the agreement reads.
    A trigger is an entry whose coefficient is positive (the key fired);
    slots without one hold -1."""

    trigger: torch.Tensor  # [d_ff, top_k] long, the prefix's last token (at the trigger position), best first
    next: torch.Tensor  # [d_ff, top_k] long, the token after the prefix; next[i, 0] is the paper's w_i


def trigger_tokens(state: MiningState, loaded: LoadedModel, texts: Sequence[str]) -> dict[str, TriggerTokens]:
    """The tokens at and after every trigger prefix, read from the corpus."""
    streams = _streams(state, loaded, texts)
    result = {}
    for layer, coefficients in state.coefficients.items():
        fired = coefficients > 0  # [d_ff, top_k]
        trigger = torch.full_like(state.sentences[layer], -1)
        following = torch.full_like(state.sentences[layer], -1)
        for key, slot in fired.nonzero().tolist():
            stream = streams[int(state.sentences[layer][key, slot])]
            position = int(state.positions[layer][key, slot])
            trigger[key, slot], following[key, slot] = stream[position], stream[position + 1]
        result[layer] = TriggerTokens(trigger, following)
    return result


def _streams(state: MiningState, loaded: LoadedModel, texts: Sequence[str]) -> dict[int, list[int]]:
    """Streams of the sentences some trigger refers to."""
    used = sorted(
        {s for layer, sentences in state.sentences.items() for s in sentences[state.coefficients[layer] > 0].tolist()}
    )
    return {s: prefix_stream(loaded, texts[s]) for s in used}


# ---------------------------------------------------------------- the stored record
#
# compact_triggers -> a JSON object, stored beside a checkpoint:
#
#   {"format": COMPACT_FORMAT, "top_k", "context_tokens", "sentences_consumed",
#    "vocabulary": {"ids": [token id, ...], "tokens": [display token, ...]},
#    "layers": {layer: {"d_ff", "counts", "coefficients", "sentences", "positions", "tokens"}}}
#
# Per layer, the triggers of key 0, then key 1, ... (counts[i] of key i, best
# first); only entries where the key fired (m_i > 0) are kept. Arrays are
# {"dtype", "shape", "base64"} of little-endian bytes:
#   counts        uint16  [d_ff]
#   coefficients  float16 [n]
#   sentences     int32   [n]   index in the mined corpus
#   positions     uint16  [n]   where the prefix ends; the context was cut when position + 1 > context_tokens
#   tokens        uint16  [n, context_tokens + 1]   indices into "vocabulary": the last context_tokens
#                 tokens of the prefix (left-padded with NO_TOKEN), the trigger token last, then the next token
#
# Size bound: a trigger costs 2 (N + 1) + 2 + 4 + 2 bytes for N context tokens,
# 26 bytes at the default N = 8. 4 layers x 512 keys x 50 triggers = 102,400
# triggers -> at most 2.66 MB of arrays, 3.55 MB as base64 in the JSON, plus
# the vocabulary (at most the model's 8,000 display tokens, ~0.1 MB) and
# d_ff counts per layer. Keys that rarely fire store fewer entries.


def compact_triggers(state: MiningState, loaded: LoadedModel, texts: Sequence[str], context_tokens: int = 8) -> dict:
    """The JSON-serialisable record described above."""
    streams = _streams(state, loaded, texts)
    rows_by_layer = {}
    used_ids: set[int] = set()
    for layer, coefficients in state.coefficients.items():
        fired = coefficients > 0  # [d_ff, top_k]; nonzero() walks it key by key, best first
        rows = []
        for key, slot in fired.nonzero().tolist():
            stream = streams[int(state.sentences[layer][key, slot])]
            position = int(state.positions[layer][key, slot])
            context = stream[max(0, position + 1 - context_tokens) : position + 1]
            rows.append([None] * (context_tokens - len(context)) + context + [stream[position + 1]])
            used_ids.update(context + [stream[position + 1]])
        rows_by_layer[layer] = (fired, rows)
    vocabulary_ids = sorted(used_ids)
    if len(vocabulary_ids) >= NO_TOKEN:
        raise ValueError(f"{len(vocabulary_ids)} distinct tokens do not fit the uint16 token arrays")
    local = {token_id: index for index, token_id in enumerate(vocabulary_ids)}
    layers = {}
    for layer, (fired, rows) in rows_by_layer.items():
        tokens = [[NO_TOKEN if t is None else local[t] for t in row] for row in rows]
        layers[layer] = {
            "d_ff": fired.shape[0],
            "counts": encode_array(fired.sum(dim=1), "<u2"),
            "coefficients": encode_array(state.coefficients[layer][fired], "<f2"),
            "sentences": encode_array(state.sentences[layer][fired], "<i4"),
            "positions": encode_array(state.positions[layer][fired], "<u2"),
            "tokens": encode_array(
                torch.tensor(tokens, dtype=torch.long).reshape(len(rows), context_tokens + 1), "<u2"
            ),
        }
    return {
        "format": COMPACT_FORMAT,
        "top_k": state.top_k,
        "context_tokens": context_tokens,
        "sentences_consumed": state.sentences_consumed,
        "vocabulary": {"ids": vocabulary_ids, "tokens": loaded.tokenizer.display_tokens(vocabulary_ids)},
        "layers": layers,
    }


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
