"""Trigger examples of feed-forward keys (Geva et al., paper 003, Section 3):
for every layer and key, the prefixes of a corpus with the largest key
coefficient m_i, at most one per sentence (a sentence's prefix where m_i
peaks), kept as a running top-k while the corpus streams through.

For a translation decoder a prefix is a teacher-forced target prefix: the
decoder input is [BOS] + target, the prefix ending at position p is
input[:p+1] and its next token is the one the model predicts there (EOS
after the last target token). A decoder-only language model reuses
`add_batch` with its own capture of the key coefficients.

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

from inference.checkpoint import LoadedModel
from inference.hooks import select_hook_names
from inference.tokenizer import TextTokenizer
from inference.trace import run_with_trace

KEY_HOOKS = "decoder.layers.*.ff.keys"
STATE_FORMAT = 1
COMPACT_FORMAT = "memlens.ff_triggers.v1"
NO_TOKEN = 0xFFFF  # left padding of a stored context shorter than context_tokens

SentencePair = tuple[str, str]  # (source, target)


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
        record = {"format": STATE_FORMAT, "top_k": self.top_k, "sentences_consumed": self.sentences_consumed,
                  "coefficients": self.coefficients, "sentences": self.sentences, "positions": self.positions}
        torch.save(record, path)

    @classmethod
    def load(cls, path: str | Path) -> MiningState:
        record = torch.load(path, map_location="cpu", weights_only=True)
        if record.get("format") != STATE_FORMAT:
            raise ValueError(f"{path}: mining state format {record.get('format')!r}, expected {STATE_FORMAT}")
        return cls(record["top_k"], record["sentences_consumed"], record["coefficients"], record["sentences"], record["positions"])


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
        order = candidate_coefficients.sort(dim=1, descending=True, stable=True).indices[:, : state.top_k]  # [d_ff, top_k]
        coefficients[layer] = candidate_coefficients.gather(1, order)
        sentences[layer] = candidate_sentences.gather(1, order)
        positions[layer] = candidate_positions.gather(1, order)
    return MiningState(state.top_k, state.sentences_consumed + b, coefficients, sentences, positions)


def mine_triggers(
    loaded: LoadedModel,
    pairs: Sequence[SentencePair],
    state: MiningState | None = None,
    batch_size: int = 32,
    top_k: int = 50,
    on_batch: Callable[[MiningState], None] | None = None,
) -> MiningState:
    """Trigger examples of every decoder FF key over a corpus of (source,
    target) pairs, teacher-forced on the targets.

    Sentence indices are positions in `pairs`. To resume, pass the same
    corpus and a saved state: mining goes on from state.sentences_consumed
    (top_k only sizes a new state). on_batch sees the state after every
    batch (e.g. to save it).
    """
    if state is None:
        layers = [_layer(hook) for hook in select_hook_names(loaded.model, [KEY_HOOKS])]
        state = MiningState.empty({layer: loaded.model.get_submodule(layer).w_in.out_features for layer in layers}, top_k)
    if state.sentences_consumed > len(pairs):
        raise ValueError(f"the state has consumed {state.sentences_consumed} sentences; the corpus has {len(pairs)}")
    for start in range(state.sentences_consumed, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        trace = run_with_trace(loaded, [source for source, _ in batch], [target for _, target in batch], names=[KEY_HOOKS])
        keys = {_layer(hook): tensor for hook, tensor in trace.tensors.items()}
        if keys.keys() != state.coefficients.keys():
            raise ValueError(f"the state holds layers {list(state.coefficients)}; the model has {list(keys)}")
        state = add_batch(state, keys, [len(ids) + 1 for ids in trace.target_ids])  # BOS + target tokens
        if on_batch is not None:
            on_batch(state)
    return state


def _layer(hook: str) -> str:
    return hook.removesuffix(".keys")


def decoder_stream(tokenizer: TextTokenizer, target: str) -> list[int]:
    """[BOS] + target + [EOS]: the prefix ending at position p is
    stream[:p+1], and stream[p+1] is its next token."""
    return [tokenizer.bos_id, *tokenizer.encode(target), tokenizer.eos_id]


@dataclass
class TriggerTokens:
    """One layer's trigger examples as the tokens the agreement reads.
    A trigger is an entry whose coefficient is positive (the key fired);
    slots without one hold -1."""

    trigger: torch.Tensor  # [d_ff, top_k] long, the prefix's last token (at the trigger position), best first
    next: torch.Tensor  # [d_ff, top_k] long, the token after the prefix; next[i, 0] is the paper's w_i


def trigger_tokens(state: MiningState, tokenizer: TextTokenizer, pairs: Sequence[SentencePair]) -> dict[str, TriggerTokens]:
    """The tokens at and after every trigger prefix, read from the corpus."""
    streams = _streams(state, tokenizer, pairs)
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


def _streams(state: MiningState, tokenizer: TextTokenizer, pairs: Sequence[SentencePair]) -> dict[int, list[int]]:
    """Decoder streams of the sentences some trigger refers to."""
    used = sorted({s for layer, sentences in state.sentences.items() for s in sentences[state.coefficients[layer] > 0].tolist()})
    return {s: decoder_stream(tokenizer, pairs[s][1]) for s in used}


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


def compact_triggers(state: MiningState, tokenizer: TextTokenizer, pairs: Sequence[SentencePair], context_tokens: int = 8) -> dict:
    """The JSON-serialisable record described above."""
    streams = _streams(state, tokenizer, pairs)
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
            "tokens": encode_array(torch.tensor(tokens, dtype=torch.long).reshape(len(rows), context_tokens + 1), "<u2"),
        }
    return {
        "format": COMPACT_FORMAT,
        "top_k": state.top_k,
        "context_tokens": context_tokens,
        "sentences_consumed": state.sentences_consumed,
        "vocabulary": {"ids": vocabulary_ids, "tokens": tokenizer.display_tokens(vocabulary_ids)},
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


def stored_triggers(compact: dict, layer: str, key: int) -> list[StoredTrigger]:
    """The trigger examples of one key from a compact record, best first."""
    record = compact["layers"][layer]
    counts = decode_array(record["counts"]).astype(np.int64)
    start = int(counts[:key].sum())
    rows = slice(start, start + int(counts[key]))
    vocabulary = compact["vocabulary"]["tokens"]
    triggers = []
    for tokens, coefficient, sentence, position in zip(
        decode_array(record["tokens"])[rows], decode_array(record["coefficients"])[rows],
        decode_array(record["sentences"])[rows], decode_array(record["positions"])[rows],
    ):
        context = [vocabulary[t] for t in tokens[:-1] if t != NO_TOKEN]
        triggers.append(StoredTrigger(context, vocabulary[tokens[-1]], float(coefficient), int(sentence), int(position),
                                      int(position) + 1 > compact["context_tokens"]))
    return triggers


def compact_trigger_tokens(compact: dict) -> dict[str, TriggerTokens]:
    """TriggerTokens from a compact record: the agreement without the corpus."""
    ids = torch.tensor(compact["vocabulary"]["ids"], dtype=torch.long)  # local index -> token id
    top_k = compact["top_k"]
    result = {}
    for layer, record in compact["layers"].items():
        counts = torch.from_numpy(decode_array(record["counts"]).astype(np.int64))  # [d_ff]
        tokens = torch.from_numpy(decode_array(record["tokens"]).astype(np.int64))  # [n, context_tokens + 1]
        filled = torch.arange(top_k)[None, :] < counts[:, None]  # [d_ff, top_k]
        trigger = torch.full(filled.shape, -1, dtype=torch.long)
        following = torch.full(filled.shape, -1, dtype=torch.long)
        trigger[filled] = ids[tokens[:, -2]]  # the trigger token: the context's last, never padding
        following[filled] = ids[tokens[:, -1]]
        result[layer] = TriggerTokens(trigger, following)
    return result
