"""Which page shows which model, decided by what the model can do
(`Capability`), never by its class or family: a new family appears on every
page whose needs its capabilities meet."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inference.core.capabilities import Capability as C

Needs = Callable[[frozenset[C]], bool]
OPENS_ON = json.loads((Path(__file__).parents[1] / "data" / "opens_on.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Page:
    title: str  # as a link says it
    path: str
    kind: str  # what the page needs, for messages: "no usable {kind} checkpoint"
    shows: Needs
    reads_language: bool = False  # the page's input is a natural language: only models trained on one
    home_to: Needs | None = None  # the models whose own page it is, where fewer than it shows; None: all it shows
    opens_with: tuple[str, str] | None = None  # (method, path) of the request its form sends when it opens

    @property
    def opens_on(self) -> tuple[str, ...]:
        """Checkpoints that show the page's subject best (app/data/opens_on.json); the first available opens it."""
        return tuple(OPENS_ON.get(self.path, ()))


# A model's own views: the first of these that shows it is where its views are.
MEMORY = Page(
    "working memory", "/memory", "working-memory", lambda c: C.WORKING_MEMORY in c, opens_with=("POST", "/memory/run")
)
FF = Page("FF memories", "/ff", "FF-key", lambda c: C.FF_KEYS in c, opens_with=("GET", "/ff/keys"))
EXPLORE = Page(
    "explore",
    "/explore",
    "attention",
    lambda c: C.ATTENTION in c,  # a working-memory decoder's own views are /memory, its attention here too
    home_to=lambda c: C.GENERATES_TEXT not in c,  # a language model's own page is its FF memories
    opens_with=("POST", "/explore/run"),
)
SEGMENTS = Page("segments", "/segments", "segment", lambda c: C.SEGMENTS in c, opens_with=("POST", "/segments/run"))
STATE = Page("state", "/state", "recurrent-step", lambda c: C.RECURRENT_STEPS in c, opens_with=("POST", "/state/run"))
FOCUS = Page(
    "focus", "/focus", "source-attribution", lambda c: C.SOURCE_ATTRIBUTION in c, opens_with=("POST", "/focus/run")
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
    opens_with=("POST", "/compare/run"),
)
# Any model with attention patterns, through /api/attention and /api/blocks.
ATTENTION = Page("attention", "/api/attention", "attention", lambda c: C.ATTENTION in c)
ATTRIBUTION = Page("attribution", "/api/attribution", "token-and-slot attribution", lambda c: C.ATTRIBUTION in c)
UPLOAD = Page("upload", "/upload", "translation", lambda c: C.TRANSLATES in c, reads_language=True)
SWEEP = Page("lesion sweep", "/sweep", "memory-lesion", lambda c: C.TRANSLATES in c and C.MEMORY_TOKENS in c)


def pages_of(capabilities: frozenset[C]) -> list[Page]:
    """The pages of one model's views, its own page first, as the home page links them."""
    showing = [page for page in MODEL_PAGES if page.shows(capabilities)]
    home = next(page for page in showing if page.home_to is None or page.home_to(capabilities))
    return [home, *(page for page in showing if page is not home)]
