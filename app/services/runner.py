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
from app.services.ff_study import FFStudy, ff_bytes, read_ff_study
from app.services.pages import FF, FOCUS, MEMORY, TRANSLATION, Page, home_of
from inference.analyses.attention import attention_stacks, pattern_hook_name
from inference.analyses.blocks import HeadBlocks, attention_blocks
from inference.analyses.ff_values import ff_memories
from inference.analyses.working_memory import (
    MemoryAttention,
    StepDecision,
    StreamToken,
    step_decisions,
    stream_tokens,
    target_to_memory_attention,
)
from inference.core.byte_cache import ByteBudgetCache, tensor_bytes
from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointRegistry
from inference.core.decoding import GREEDY, Decoding
from inference.core.family import capabilities_of
from inference.core.ff_memories import FFMemories
from inference.core.hooks import hook_points
from inference.core.interventions import Interventions
from inference.core.loaded_model import LoadedModel
from inference.core.trace import Trace
from inference.core.tracing import run_with_trace
from inference.runs.attribution import Attribution, attribute
from inference.runs.source_attribution import SourceAttribution, source_attribution

RECENT_TRACE_BYTES = 256 * 2**20  # a trace with every pattern of a 256-token input is tens of MB
FF_STUDY_BYTES = 512 * 2**20  # the language model's values, embedding and triggers are about 70 MB
MAX_ATTRIBUTED_SOURCE = 24  # source tokens of a whole-output attribution (the Focus page)
MAX_ATTRIBUTED_OUTPUTS = 24  # output tokens it attributes (and the Focus page's outputs: the maps' rows)
LOCK_POLL_SECONDS = 0.05  # how often a request waiting for the model checks that its client is still there


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
    interventions: list[dict]  # the normalised interventions, as the API takes them
    decoding: dict | None  # how the output was chosen (Decoding); None where it was given


@dataclass
class MemoryView:
    """One sentence through a working-memory model: what the Working memory page and /api/memory show."""

    trace: Trace
    stream: list[StreamToken]
    steps: list[StepDecision]
    attention: MemoryAttention


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

    def capabilities(self, name: str) -> frozenset[Capability]:
        """What a usable or broken model can do, read from its config without loading it; unknown: UnknownModel."""
        entry = self.registry.entries.get(name)
        if entry is None or entry.config is None:
            self.model(name)  # raises: unknown, or broken with its reason
        return capabilities_of(entry.config)

    def available(self, page: Page) -> list[str]:
        """Usable models that `page` shows."""
        return [name for name in self.registry.available() if self._shows(page, name)]

    def _shows(self, page: Page, name: str) -> bool:
        entry = self.registry.entries[name]
        return page.shows(capabilities_of(entry.config)) and (
            not page.reads_language or bool(entry.meta.get("source_language"))
        )

    def page_models(self, requested: str | None, page: Page) -> tuple[list[str], str]:
        """(the models a page offers, the one it shows: the requested one, else the first of the page's
        `opens_on` that is available, else the first)."""
        available = self.available(page)
        if not available:
            raise InputError(
                f"no usable {page.kind} checkpoint: see the home page for the models and why any is unavailable"
            )
        return available, requested or next((m for m in page.opens_on if m in available), available[0])

    def model_for(self, name: str, page: Page) -> LoadedModel:
        """A model that `page` shows; another is refused, before it is loaded, with where its views are."""
        entry = self.registry.entries.get(name)
        if entry is not None and entry.ok and not self._shows(page, name):
            offered = ", ".join(self.available(page)) or "none"
            capabilities = capabilities_of(entry.config)
            if page.shows(capabilities):  # it can, but reads no natural language
                task = entry.meta.get("task")
                raise InputError(
                    f"{name} reads no natural language{f' (it was trained on the {task} task)' if task else ''}; "
                    f"{page.kind} models: {offered}"
                )
            home = home_of(capabilities)
            raise InputError(
                f"{name} is not a {page.kind} model: its views are on the {home.title} page ({home.path}); "
                f"{page.kind} models: {offered}"
            )
        return self.model(name)  # unknown: UnknownModel; broken: CheckpointError

    def model(self, name: str) -> LoadedModel:
        if name not in self.registry.entries:
            raise UnknownModel(
                f"unknown model {shown(name)}; available: {', '.join(self.registry.available()) or 'none'}"
            )
        return self.registry.get(name)

    def pattern_hook(self, name: str, stack: str, layer: int) -> str:
        """The hook of one stack's layer, or an InputError naming what the model has."""
        model = self.model(name).model
        stacks = attention_stacks(model)
        if stack not in stacks:
            raise InputError(f"unknown stack {shown(stack)}; this model has {', '.join(stacks)}")
        if layer >= stacks[stack]:
            raise InputError(f"layer {layer} is out of range for {stack} (0 to {stacks[stack] - 1})")
        return pattern_hook_name(hook_points(model), stack, layer)

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
        max_new_tokens: int | None = None,
    ) -> Trace:
        """The model's own output for `text` under `interventions`, traced
        (`seed`: the sampling seed of a model that samples; `decoding`: greedy or beam search;
        `max_new_tokens`: fewer than the configured limit).

        Recent traces are kept: toggling a lesion back and forth, or
        switching the layer on view, re-runs nothing."""
        new_tokens = min(max_new_tokens or self.max_new_tokens, self.max_new_tokens)
        return self._recent_trace(self.model(model), text, interventions, names, new_tokens, seed, decoding)

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
        loaded = self.model_for(model, FF)
        with self._ff_lock:
            found = self._ff.get(model)
            if found is None:
                found = (ff_memories(loaded.model), read_ff_study(self.registry.entries[model].path))
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
        loaded = self.model_for(model, FF)
        memories, _ = self.ff(model)
        generates = Capability.GENERATES_TEXT in capabilities_of(loaded.config)
        new_tokens = self.continuation_tokens if generates else self.max_new_tokens
        return self._recent_trace(loaded, text, interventions, memories.capture_hooks(), new_tokens, 0)

    def ff_runs(self, model: str, text: str, interventions: Interventions) -> tuple[Trace, Trace | None]:
        """(the plain FF trace, the one under `interventions` or None when they change nothing)."""
        plain = self.ff_trace(model, text, Interventions())
        return plain, None if interventions.is_noop() else self.ff_trace(model, text, interventions)

    def trace_many(
        self, model: str, texts: list[str], names: list[str] | None, interventions: Interventions | None = None
    ) -> Trace:
        """A batch of already checked texts, traced; not kept."""
        loaded = self.model_for(model, TRANSLATION)
        with self.model_turn():
            return run_with_trace(
                loaded, texts, names=names, interventions=interventions, max_new_tokens=self.max_new_tokens
            )

    def memory_view(self, model: str, text: str, interventions: Interventions, seed: int, layer: int) -> MemoryView:
        loaded = self.model_for(model, MEMORY)
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
        self.model_for(model, TRANSLATION)
        trace = self.trace(model, text, interventions, names=["logits"], decoding=decoding)
        return translation_of(trace)

    def attribution(
        self, model: str, text: str, position: int, interventions: Interventions, decoding: Decoding = GREEDY
    ) -> Attribution:
        loaded = self.model(model)
        if Capability.ATTRIBUTION not in capabilities_of(loaded.config):
            raise InputError(f"attribution onto input tokens and memory slots does not apply to {model}")
        text = self.check_text(loaded, text)
        with self.model_turn():
            try:
                return attribute(loaded, text, position, interventions, decoding=decoding)
            except ValueError as error:  # an output position the translation does not have
                raise InputError(str(error)) from None

    @staticmethod
    def check_vocabulary(loaded: LoadedModel, text: str) -> str:
        """The text, if the model's tokenizer has a token for every character of it (a task model's is small)."""
        tokenizer = loaded.tokenizer
        unknown = sorted({c for c in text if not c.isspace() and tokenizer.unk_id in tokenizer.encode(c)})
        if unknown:
            raise InputError(f"the model's vocabulary has no token for {' '.join(repr(c) for c in unknown[:10])}")
        return text

    def attributable_text(self, model: str, text: str) -> str:
        """The text, if the model can attribute its whole output onto it: a source-attribution model and at
        most MAX_ATTRIBUTED_SOURCE tokens (each output token costs n_steps runs of the whole model)."""
        loaded = self.model_for(model, FOCUS)
        text = self.check_vocabulary(loaded, self.check_text(loaded, text))
        n_tokens = len(loaded.tokenizer.encode(text))
        if n_tokens > MAX_ATTRIBUTED_SOURCE:
            raise InputError(
                f"attribution takes at most {MAX_ATTRIBUTED_SOURCE} source tokens; this text has {n_tokens}"
            )
        return text

    def source_attribution(self, model: str, text: str, n_steps: int) -> SourceAttribution:
        """Integrated gradients of the model's first MAX_ATTRIBUTED_OUTPUTS output tokens onto its source."""
        text = self.attributable_text(model, text)
        with self.model_turn():
            return source_attribution(self.model(model), text, self.attributed_outputs, n_steps)

    @property
    def attributed_outputs(self) -> int:
        return min(self.max_new_tokens, MAX_ATTRIBUTED_OUTPUTS)

    def blocks(
        self, model: str, text: str, interventions: Interventions, decoding: Decoding = GREEDY
    ) -> list[HeadBlocks]:
        return attention_blocks(self.trace(model, text, interventions, names=["*.pattern"], decoding=decoding))


def translation_of(trace: Trace) -> Translation:
    return Translation(
        model=trace.run.model,
        source=trace.sources[0],
        translation=trace.outputs[0],
        tokens={axis: rows[0] for axis, rows in trace.tokens.items()},
        roles={axis: rows[0] for axis, rows in trace.roles.items()},
        memory_size=trace.run.memory_size,
        interventions=trace.run.interventions.model_dump(),
        decoding=trace.run.decoding.model_dump() if trace.run.decoding else None,
    )


def trace_bytes(trace: Trace) -> int:
    """Bytes of a trace's tensors: every call of every capture, and the logits."""
    return tensor_bytes(*(call.tensor for capture in trace.captures.values() for call in capture.calls), trace.logits)
