"""Mining FF-key trigger examples over a corpus (Geva et al., paper 003,
Section 3): what one batch gives (`mined_batch`: the keys of the texts
traced, for the running top-k of `inference.analyses.ff_mining`), and the
bounded record the app reads (`compact_triggers`, `TriggerStore`). The
mining itself is one corpus job (inference.corpus_jobs.states.mining_job),
which the app, the CLI and the training study run.

A text is read by the model's kind: a model that translates is
teacher-forced on the text as its target after its source; a model that
generates text reads it as its family frames a prompt (`Family.prompt_ids`:
[EOS] + text for the language model trained here, [BOS] + text for a
Hugging Face LM).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from inference.analyses.ff_mining import COMPACT_FORMAT, NO_TOKEN, MiningState, TriggerTokens, encode_array
from inference.analyses.ff_values import ff_memories
from inference.core.capabilities import Capability
from inference.core.family import LoadedModel, capabilities_of
from inference.core.hook_names import ff_keys
from inference.core.hooks import hook_points
from inference.core.trace import Trace
from inference.core.tracing import run_with_trace


def key_counts(model: nn.Module) -> dict[str, int]:
    """FF layer -> its keys, as each layer's key hook point declares them (every family's, however it computes
    them), for the layers read as memories (ff_values.ff_memories)."""
    return {layer: hook_points(model)[ff_keys(layer)].sizes["ff_key"] for layer in ff_memories(model).layers}


def mined_batch(
    loaded: LoadedModel, texts: Sequence[str], sources: Sequence[str] | None, layers: list[str], batch: slice
) -> tuple[dict[str, torch.Tensor], list[int]]:
    """(layer -> key coefficients [b, t, d_ff], the real positions of each text) of the texts in `batch`. Only
    these leave: the trace's logits ([b, t, vocab], the largest tensor of a batch) are freed at once, not kept
    alive while the next batch runs."""
    texts_in = list(texts[batch])
    trace = trace_texts(
        loaded, texts_in, None if sources is None else list(sources[batch]), [ff_keys(layer) for layer in layers]
    )
    lengths = [len(prefix_stream(loaded, text)) - 1 for text in texts_in]
    return {layer: trace.tensor(ff_keys(layer)) for layer in layers}, lengths


def trace_texts(loaded: LoadedModel, texts: list[str], sources: list[str] | None, names: list[str]) -> Trace:
    """One pass over corpus texts as their streams read them (module doc):
    a text generator on each text, a translation decoder teacher-forced on
    each text after its source."""
    if _reads_text(loaded):
        return run_with_trace(loaded, texts, names=names, max_new_tokens=0)
    if sources is None:
        raise ValueError("a translation model's decoder is mined on (source, target) pairs: give the sources")
    return run_with_trace(loaded, sources, texts, names=names)


def prefix_stream(loaded: LoadedModel, text: str) -> list[int]:
    """The token stream of one corpus text (module doc)."""
    tokenizer = loaded.tokenizer
    if _reads_text(loaded):
        return loaded.family.prompt_ids(loaded.config, tokenizer, text)
    return [tokenizer.bos_id, *tokenizer.encode(text), tokenizer.eos_id]


def _reads_text(loaded: LoadedModel) -> bool:
    """True for a model that continues text (it reads a corpus text alone), False for a translator."""
    return Capability.TRANSLATES not in capabilities_of(loaded.config)


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
