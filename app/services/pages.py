"""Which page shows which model, decided by what the model can do
(`Capability`), never by its class or family: a new family appears on every
page whose needs its capabilities meet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from inference.core.family import Capability as C

Needs = Callable[[frozenset[C]], bool]


@dataclass(frozen=True)
class Page:
    title: str  # as a link says it
    path: str
    kind: str  # what the page needs, for messages: "no usable {kind} checkpoint"
    shows: Needs
    reads_language: bool = False  # the page's input is a natural language: only models trained on one
    opens_on: tuple[str, ...] = ()  # checkpoints that show the page's subject best, the first available opens it


# A model's own views: the first of these that shows it is where its views are.
MEMORY = Page(
    "working memory", "/memory", "working-memory", lambda c: C.WORKING_MEMORY in c, opens_on=("working_memory_de_en",)
)
FF = Page("FF memories", "/ff", "FF-key", lambda c: C.FF_KEYS in c, opens_on=("language_model",))
EXPLORE = Page(
    "explore",
    "/explore",
    "attention",
    lambda c: not c & {C.WORKING_MEMORY, C.GENERATES_TEXT, C.RECURRENT_STEPS},  # a state, not attention
    opens_on=("memtransformer_10",),  # memory slots read and written in every attention stack
)
SEGMENTS = Page("segments", "/segments", "segment", lambda c: C.SEGMENTS in c, opens_on=("rmt_copy",))
STATE = Page("state", "/state", "recurrent-step", lambda c: C.RECURRENT_STEPS in c, opens_on=("neural_gpu_addition",))
FOCUS = Page(
    "focus",
    "/focus",
    "source-attribution",
    lambda c: C.SOURCE_ATTRIBUTION in c,
    opens_on=("extended_neural_gpu_de_en",),
)
MODEL_PAGES = (MEMORY, SEGMENTS, STATE, EXPLORE, FF, FOCUS)  # in the order the home page links them

# Any model that translates, through the API (a task model's input is its own notation).
TRANSLATION = Page("translation", "/api/translate", "translation", lambda c: C.TRANSLATES in c)
COMPARE = Page(
    "compare",
    "/compare",
    "translation",
    lambda c: C.TRANSLATES in c and C.BEAM_SEARCH in c,
    reads_language=True,
    opens_on=("transformer", "memtransformer_10"),  # the baseline beside the Memory Transformer
)
UPLOAD = Page(
    "upload",
    "/upload",
    "translation",
    lambda c: C.TRANSLATES in c,
    reads_language=True,
    opens_on=("memtransformer_10",),
)
SWEEP = Page("lesion sweep", "/sweep", "memory-lesion", lambda c: C.TRANSLATES in c and C.MEMORY_TOKENS in c)


def pages_of(capabilities: frozenset[C]) -> list[Page]:
    """The pages of one model's views, as the home page links them."""
    return [page for page in MODEL_PAGES if page.shows(capabilities)]


def home_of(capabilities: frozenset[C]) -> Page:
    """Where a model's views are: its first page."""
    return pages_of(capabilities)[0]
