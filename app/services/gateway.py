"""The app's one door to the models: loads through the registry, runs one
request at a time per device, and keeps recent traces.

Inference is serialised with a lock: concurrent requests queue instead of
fighting over the GPU (or the CPU threads) and interleaving hooks on a
shared model; every run executes on one of the process's two model
threads (app/services/model_thread.py says why). Recent traces are read without
that lock, so a cached view never waits behind a long run, and a request
whose client has gone gives up its place in the queue. Which page may show
which model is decided in app/services/gating.py; what a page makes of a
run, in its own service.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from app.middleware.client_gone import ClientGone, client_gone
from app.schemas.validation import InputError, shown, visible_text
from app.services.model_thread import on_model_thread, splits_over_cpu_threads
from inference.core.byte_cache import ByteBudgetCache, tensor_bytes
from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointRegistry
from inference.core.decoding import CONTINUATION_TOKENS, GREEDY, Decoding
from inference.core.family import LoadedModel, capabilities_of
from inference.core.interventions import NO_INTERVENTIONS, Interventions
from inference.core.refusals import InputRefused
from inference.core.trace import Trace
from inference.core.tracing import run_with_trace

RECENT_TRACE_BYTES = 256 * 2**20  # a trace with every pattern of a 256-token input is tens of MB
LOCK_POLL_SECONDS = 0.05  # how often a request waiting for the model checks that its client is still there
Result = TypeVar("Result")


class UnknownModel(LookupError):
    pass


@dataclass(frozen=True)
class RunLimits:
    """What one request may make a model do."""

    max_text_chars: int
    max_source_tokens: int
    max_new_tokens: int
    continuation_tokens: int = CONTINUATION_TOKENS  # a language model's continuation unless the reader asks for more

    def continuation(self, asked: int | None) -> int:
        """The tokens a language model continues a text by: `asked` (None: the default budget), or an InputError
        where it is more than a request may make a model decode."""
        if asked is None:
            return min(self.continuation_tokens, self.max_new_tokens)
        if not 1 <= asked <= self.max_new_tokens:
            raise InputError(f"a continuation of {asked} tokens is out of range (1 to {self.max_new_tokens})")
        return asked


@dataclass(frozen=True)
class TextLength:
    """A text's length against the limits a model run applies to it."""

    chars: int
    tokens: int | None  # None: not counted, the text being over the character limit already
    char_limit: int
    token_limit: int

    @property
    def refusal(self) -> str | None:
        """Why a run refuses the text, in words; None where it fits."""
        if self.chars > self.char_limit:
            return f"the text has {self.chars} characters; the limit is {self.char_limit}"
        if self.tokens is not None and self.tokens > self.token_limit:
            return f"the text has {self.tokens} tokens; the limit is {self.token_limit}"
        return None


class ModelGateway:
    def __init__(self, registry: CheckpointRegistry, limits: RunLimits, recent_trace_bytes: int = RECENT_TRACE_BYTES):
        self.registry = registry
        self.limits = limits
        self.lock = threading.Lock()  # held for every model run
        self._recent: ByteBudgetCache[Trace] = ByteBudgetCache(recent_trace_bytes, trace_bytes)

    def model(self, name: str) -> LoadedModel:
        """The loaded model; unknown: UnknownModel; broken: CheckpointError with its reason."""
        if name not in self.registry.entries:
            raise UnknownModel(
                f"unknown model {shown(name)}; available: {', '.join(self.registry.available()) or 'none'}"
            )
        return self.registry.get(name)

    def capabilities(self, name: str) -> frozenset[Capability]:
        """What a usable or broken model can do, read from its config without loading it; unknown: UnknownModel."""
        entry = self.registry.entries.get(name)
        if entry is None or entry.config is None:
            self.model(name)  # raises: unknown, or broken with its reason
        assert entry is not None and entry.config is not None
        return capabilities_of(entry.config)

    @contextmanager
    def turn(self) -> Iterator[None]:
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

    def exclusive(self, run: Callable[[], Result]) -> Result:
        """`run` in the model's turn, on the model thread; a ValueError it raises about its input (a position the
        output does not have, beam search on a model that samples, a text over the model's window) is an
        InputError."""
        with self.turn():
            try:
                return on_model_thread(run)
            except InputRefused as error:
                raise InputError(str(error)) from None

    def token_limit(self, loaded: LoadedModel) -> int:
        """The most tokens a text may have for `loaded`: the configured limit, or less where a language model's
        window is shorter (its prompt adds one token: BOS or EOS)."""
        if Capability.GENERATES_TEXT in capabilities_of(loaded.config):
            return min(self.limits.max_source_tokens, loaded.config.max_positions - 1)
        return self.limits.max_source_tokens

    def text_length(self, loaded: LoadedModel, text: str) -> TextLength:
        """How long `text` (stripped) is for `loaded`, against the limits check_text applies."""
        text = text.strip()
        tokens = len(loaded.tokenizer.encode(text)) if len(text) <= self.limits.max_text_chars else None
        return TextLength(len(text), tokens, self.limits.max_text_chars, self.token_limit(loaded))

    def check_text(self, loaded: LoadedModel, text: str) -> str:
        """The text, stripped, within the configured characters and the model's tokens (token_limit)."""
        text = visible_text(text)
        length = self.text_length(loaded, text)
        if length.refusal:
            raise InputError(length.refusal)
        return text

    @staticmethod
    def check_vocabulary(loaded: LoadedModel, text: str) -> str:
        """The text, if the model's tokenizer reads all of it without its unknown token (a task model's vocabulary
        is small); else an InputError naming what it cannot read: the characters of a word where the rest of the
        word reads one token a character (a character vocabulary), else the word."""
        tokenizer = loaded.tokenizer
        unk = tokenizer.unk_id
        if unk is None:  # a byte-level vocabulary has a token for everything
            return text
        unknown: list[str] = []
        for word in text.split():
            if unk not in tokenizer.encode(word):
                continue
            characters = {c for c in word if unk in tokenizer.encode(c)}
            rest = "".join(c for c in word if c not in characters)
            rest_ids = tokenizer.encode(rest)
            readable = len(rest) >= 2 and unk not in rest_ids and len(rest_ids) == len(rest)
            unknown.extend(sorted(characters) if readable else [word])
        if unknown:
            listed = " ".join(repr(c) for c in list(dict.fromkeys(unknown))[:10])
            raise InputError(f"the model's vocabulary has no token for {listed}")
        return text

    def trace(
        self,
        loaded: LoadedModel,
        text: str,
        interventions: Interventions = NO_INTERVENTIONS,
        names: list[str] | None = None,
        seed: int = 0,
        decoding: Decoding = GREEDY,
        max_new_tokens: int | None = None,
    ) -> Trace:
        """The model's own output for `text` under `interventions`, traced (`seed`: the sampling seed of a model
        that samples; `max_new_tokens`: fewer than the configured limit).

        Recent traces are kept: toggling a lesion back and forth, or switching the layer on view, re-runs
        nothing."""
        text = self.check_text(loaded, text)
        new_tokens = min(max_new_tokens or self.limits.max_new_tokens, self.limits.max_new_tokens)
        key = (
            loaded.name,
            text,
            interventions,
            tuple(names) if names is not None else None,
            new_tokens,
            seed,
            decoding,
        )
        trace = self._recent.get(key)
        if trace is not None:
            return trace
        with self.turn():
            trace = self._recent.get(key)  # another request may have run it while this one waited
            if trace is not None:
                return trace
            try:
                trace = on_model_thread(
                    partial(
                        run_with_trace,
                        loaded,
                        text,
                        names=names,
                        interventions=interventions,
                        max_new_tokens=new_tokens,
                        seed=seed,
                        decoding=decoding,
                    ),
                    one_cpu_thread=not splits_over_cpu_threads(loaded.model),
                )
            except InputRefused as error:  # input the checks above cannot see: a text over the model's window
                raise InputError(str(error)) from None
        self._recent.put(key, trace)
        return trace

    @property
    def recent_bytes(self) -> int:
        """Bytes held by the recent traces."""
        return self._recent.nbytes

    @property
    def recent_runs(self) -> int:
        """How many recent traces are kept."""
        return len(self._recent)


def trace_bytes(trace: Trace) -> int:
    """Bytes of a trace's tensors: every call of every capture, and the logits."""
    return tensor_bytes(*(call.tensor for capture in trace.captures.values() for call in capture.calls), trace.logits)
