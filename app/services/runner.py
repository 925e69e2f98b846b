"""The app's one door to the models: loads through the registry, runs one
request at a time per device, and turns traces into analysis data.

Inference is serialised with a lock: concurrent requests queue instead of
fighting over the GPU (or the CPU threads) and interleaving hooks on a
shared model. Recent traces are read without that lock, so a cached view
never waits behind a long run, and a request whose client has gone gives
up its place in the queue.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from app.middleware.client_gone import ClientGone, client_gone
from app.schemas.validation import InputError, shown, visible_text
from inference.analyses.blocks import HeadBlocks, attention_blocks
from inference.analyses.ff_mining import TriggerStore
from inference.analyses.ff_values import FFMemories, ff_memories
from inference.analyses.working_memory import (
    MemoryAttention,
    StepDecision,
    StreamToken,
    step_decisions,
    stream_tokens,
    target_to_memory_attention,
)
from inference.core.byte_cache import ByteBudgetCache, tensor_bytes
from inference.core.checkpoint import CheckpointRegistry, LoadedModel, read_json_object
from inference.core.decoding import GREEDY, Decoding
from inference.core.interventions import Interventions
from inference.core.trace import Trace, run_with_trace
from inference.corpora.ff_study_files import ANALYSIS_FILE, TRIGGERS_FILE, read_triggers
from inference.families.language_model.model import FAMILY as LANGUAGE_MODEL_FAMILY
from inference.families.working_memory.model import FAMILY as WORKING_MEMORY_FAMILY
from inference.runs.attribution import Attribution, attribute

RECENT_TRACE_BYTES = 256 * 2**20  # a trace with every pattern of a 256-token input is tens of MB
FF_STUDY_BYTES = 512 * 2**20  # the language model's values, embedding and triggers are about 70 MB
LOCK_POLL_SECONDS = 0.05  # how often a request waiting for the model checks that its client is still there

# Kinds of model, by the pages that show them: translation models with
# [mem] slots or none (Explore, Compare), working-memory translation models
# (Working memory), the language model (FF memories, which also reads the
# translation models' decoders).
TRANSLATION, WORKING_MEMORY, LANGUAGE_MODEL = "translation", "working-memory", "language"
TRANSLATORS = (TRANSLATION, WORKING_MEMORY)


def kind_of(family: str) -> str:
    return {WORKING_MEMORY_FAMILY: WORKING_MEMORY, LANGUAGE_MODEL_FAMILY: LANGUAGE_MODEL}.get(family, TRANSLATION)


class UnknownModel(LookupError):
    pass


@dataclass
class Translation:
    model: str
    source: str
    translation: str
    tokens: dict[str, list[str]]  # axis -> display tokens
    roles: dict[str, list[str]]  # axis -> roles
    memory_size: int
    interventions: dict
    decoding: (
        dict | None
    )  # how the output was chosen (Decoding); None for a working-memory model, which samples its memory


@dataclass
class MemoryView:
    """One sentence through a working-memory model: what the Working memory page and /api/memory show."""

    trace: Trace
    stream: list[StreamToken]
    steps: list[StepDecision]
    attention: MemoryAttention


@dataclass
class FFStudy:
    """The FF-memory study files beside a checkpoint (training/ff_study.py); None where not computed."""

    triggers: TriggerStore | None
    analysis: dict | None


class Runner:
    def __init__(
        self,
        registry: CheckpointRegistry,
        max_text_chars: int,
        max_source_tokens: int,
        max_new_tokens: int,
        continuation_tokens: int = 24,
        recent_trace_bytes: int = RECENT_TRACE_BYTES,
        ff_study_bytes: int = FF_STUDY_BYTES,
    ):
        self.registry = registry
        self.max_text_chars = max_text_chars
        self.max_source_tokens = max_source_tokens
        self.max_new_tokens = max_new_tokens
        self.continuation_tokens = (
            continuation_tokens  # the language model's greedy continuation on the FF memories page
        )
        self.lock = threading.Lock()  # held for every model run
        self._recent: ByteBudgetCache[Trace] = ByteBudgetCache(recent_trace_bytes, trace_bytes)
        self._ff: ByteBudgetCache[tuple[FFMemories, FFStudy]] = ByteBudgetCache(ff_study_bytes, ff_bytes)
        self._ff_lock = threading.Lock()  # one reading of a study at a time

    @contextmanager
    def model_turn(self) -> Iterator[None]:
        """Hold the model lock; a request whose client disconnects while it
        waits raises ClientGone instead of running."""
        while not self.lock.acquire(timeout=LOCK_POLL_SECONDS):
            if client_gone():
                raise ClientGone()
        try:
            if client_gone():
                raise ClientGone()
            yield
        finally:
            self.lock.release()

    def available(self, *kinds: str) -> list[str]:
        """Usable models of the given kinds (they have different pages)."""
        registry = self.registry
        return [name for name in registry.available() if kind_of(registry.entries[name].config.family) in kinds]

    def page_models(self, requested: str | None, *kinds: str) -> tuple[list[str], str]:
        """(the models a page offers, the one it shows: the requested one, else the first)."""
        available = self.available(*kinds)
        if not available:
            raise InputError(
                f"no usable {' or '.join(kinds)} checkpoint: "
                "see the home page for the models and why any is unavailable"
            )
        return available, requested or available[0]

    def model(self, name: str) -> LoadedModel:
        if name not in self.registry.entries:
            raise UnknownModel(
                f"unknown model {shown(name)}; available: {', '.join(self.registry.available()) or 'none'}"
            )
        return self.registry.get(name)

    def translator(self, name: str) -> LoadedModel:
        """A model that translates; the language model is refused with where its views are."""
        loaded = self.model(name)
        if kind_of(loaded.config.family) == LANGUAGE_MODEL:
            raise InputError(
                f"{name} is a language model, not a translation model: its views are on the FF memories page (/ff)"
            )
        return loaded

    def check_text(self, loaded: LoadedModel, text: str) -> str:
        text = visible_text(text)
        if len(text) > self.max_text_chars:
            raise InputError(f"the text has {len(text)} characters; the limit is {self.max_text_chars}")
        n_tokens = len(loaded.tokenizer.encode(text))
        if n_tokens > self.max_source_tokens:
            raise InputError(f"the text has {n_tokens} tokens; the limit is {self.max_source_tokens}")
        return text

    def trace(
        self,
        model: str,
        text: str,
        interventions: Interventions,
        names: list[str] | None,
        seed: int = 0,
        decoding: Decoding = GREEDY,
    ) -> Trace:
        """The model's own translation of `text` under `interventions`, traced
        (`seed`: the working memory's sampling seed; `decoding`: greedy or beam search).

        Recent traces are kept: toggling a lesion back and forth, or
        switching the layer on view, re-runs nothing."""
        return self._recent_trace(
            self.translator(model), text, interventions, names, self.max_new_tokens, seed, decoding
        )

    def _recent_trace(
        self,
        loaded: LoadedModel,
        text: str,
        interventions: Interventions,
        names: list[str] | None,
        max_new_tokens: int,
        seed: int,
        decoding: Decoding = GREEDY,
    ) -> Trace:
        text = self.check_text(loaded, text)
        key = (
            loaded.name,
            text,
            interventions,
            tuple(names) if names is not None else None,
            max_new_tokens,
            seed,
            decoding,
        )
        trace = self._recent.get(key)
        if trace is not None:
            return trace
        with self.model_turn():
            trace = self._recent.get(key)  # another request may have run it while this one waited
            if trace is not None:
                return trace
            try:
                trace = run_with_trace(
                    loaded,
                    text,
                    names=names,
                    interventions=interventions,
                    max_new_tokens=max_new_tokens,
                    seed=seed,
                    decoding=decoding,
                )
            # input the checks above cannot see: a text longer than the language model's window,
            # beam search on a model that samples
            except ValueError as error:
                raise InputError(str(error)) from None
        self._recent.put(key, trace)
        return trace

    @property
    def recent_bytes(self) -> int:
        """Bytes held by the recent traces."""
        return self._recent.nbytes

    def ff(self, model: str) -> tuple[FFMemories, FFStudy]:
        """A model's FF memories and its stored study, read once."""
        loaded = self.model(model)
        with self._ff_lock:
            found = self._ff.get(model)
            if found is None:
                folder = self.registry.entries[model].path
                triggers = (
                    TriggerStore(read_triggers(folder / TRIGGERS_FILE)) if (folder / TRIGGERS_FILE).exists() else None
                )
                analysis = read_json_object(folder / ANALYSIS_FILE) if (folder / ANALYSIS_FILE).exists() else None
                found = (ff_memories(loaded.model), FFStudy(triggers, analysis))
                self._ff.put(model, found)
            return found

    def ff_layer(self, model: str, layer: int) -> str:
        """FF layer index -> module name, or an InputError."""
        layers = self.ff(model)[0].layers
        if not 0 <= layer < len(layers):
            raise InputError(f"layer {layer} is out of range (0 to {len(layers) - 1})")
        return layers[layer]

    def ff_trace(self, model: str, text: str, interventions: Interventions) -> Trace:
        """What the FF memories page reads: the language model on the text and
        its greedy continuation, or a translation model's decoder on its own
        translation, with the hooks of the aggregation and the logit lens."""
        loaded = self.model(model)
        memories, _ = self.ff(model)
        new_tokens = (
            self.continuation_tokens if kind_of(loaded.config.family) == LANGUAGE_MODEL else self.max_new_tokens
        )
        return self._recent_trace(loaded, text, interventions, memories.capture_hooks(), new_tokens, 0)

    def ff_runs(self, model: str, text: str, interventions: Interventions) -> tuple[Trace, Trace | None]:
        """(the plain FF trace, the one under `interventions` or None when they change nothing)."""
        plain = self.ff_trace(model, text, Interventions())
        return plain, None if interventions.is_noop() else self.ff_trace(model, text, interventions)

    def trace_many(
        self, model: str, texts: list[str], names: list[str] | None, interventions: Interventions | None = None
    ) -> Trace:
        """A batch of already checked texts, traced; not kept."""
        loaded = self.translator(model)
        with self.model_turn():
            return run_with_trace(
                loaded, texts, names=names, interventions=interventions, max_new_tokens=self.max_new_tokens
            )

    def working_memory(self, name: str) -> LoadedModel:
        """A working-memory model; a model of another family is refused before it is loaded."""
        entry = self.registry.entries.get(name)
        if entry is not None and entry.ok and entry.config.family != WORKING_MEMORY_FAMILY:
            raise InputError(
                f"{name} has no working memory; "
                f"working-memory models: {', '.join(self.available(WORKING_MEMORY)) or 'none'}"
            )
        return self.model(name)  # unknown: UnknownModel; broken: CheckpointError

    def memory_view(self, model: str, text: str, interventions: Interventions, seed: int, layer: int) -> MemoryView:
        loaded = self.working_memory(model)
        if not 0 <= layer < loaded.config.n_decoder_layers:
            raise InputError(f"layer {layer} is out of range (0 to {loaded.config.n_decoder_layers - 1})")
        trace = self.trace(model, text, interventions, ["decoder.layers.*.self_attn.pattern"], seed)
        return MemoryView(
            trace,
            stream_tokens(trace),
            step_decisions(trace, loaded.tokenizer),
            target_to_memory_attention(trace, layer),
        )

    def translate(
        self, model: str, text: str, interventions: Interventions, decoding: Decoding = GREEDY
    ) -> Translation:
        trace = self.trace(model, text, interventions, names=["logits"], decoding=decoding)
        return translation_of(trace)

    def attribution(
        self, model: str, text: str, position: int, interventions: Interventions, decoding: Decoding = GREEDY
    ) -> Attribution:
        loaded = self.translator(model)
        if loaded.config.family == WORKING_MEMORY_FAMILY:
            raise InputError(
                f"{model} is a working-memory model: "
                "attribution onto [mem] slots does not apply (see its Working memory page)"
            )
        text = self.check_text(loaded, text)
        with self.model_turn():
            try:
                return attribute(loaded, text, position, interventions, decoding=decoding)
            except ValueError as error:  # an output position the translation does not have
                raise InputError(str(error)) from None

    def blocks(
        self, model: str, text: str, interventions: Interventions, decoding: Decoding = GREEDY
    ) -> list[HeadBlocks]:
        return attention_blocks(self.trace(model, text, interventions, names=["*.pattern"], decoding=decoding))


def translation_of(trace: Trace) -> Translation:
    return Translation(
        model=trace.config["model"],
        source=trace.sources[0],
        translation=trace.translations[0],
        tokens={axis: rows[0] for axis, rows in trace.tokens.items()},
        roles={axis: rows[0] for axis, rows in trace.roles.items()},
        memory_size=trace.config["run_memory_size"],
        interventions=trace.config["interventions"],
        decoding=trace.config.get("decoding"),
    )


def trace_bytes(trace: Trace) -> int:
    """Bytes of a trace's tensors (captures, logits, working-memory choices)."""
    return tensor_bytes(*trace.tensors.values(), trace.logits, *([trace.choices] if trace.choices is not None else []))


def ff_bytes(entry: tuple[FFMemories, FFStudy]) -> int:
    """Bytes of a model's FF values and output embedding (copies of its weights) and its decoded trigger store."""
    memories, study = entry
    triggers = (
        [array for arrays in study.triggers.arrays.values() for array in arrays.values()] if study.triggers else []
    )
    return tensor_bytes(*memories.values.values(), memories.output_embedding, *triggers)
