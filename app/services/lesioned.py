"""Run plainly, then lesioned: how every page with live lesions runs a model. The plain run is the cached one
(toggling a lesion never re-runs it), and a lesion that changes nothing runs nothing more."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.services.gateway import ModelGateway
from inference.core.decoding import GREEDY, Decoding
from inference.core.family import LoadedModel
from inference.core.interventions import NO_INTERVENTIONS, Interventions
from inference.core.trace import Trace


@dataclass(frozen=True)
class LesionedRun:
    plain: Trace
    lesioned: Trace | None  # None: no lesion asked

    @property
    def shown(self) -> Trace:
        """What the views follow: the lesioned run where there is one."""
        return self.lesioned or self.plain


def plain_then_lesioned(
    gateway: ModelGateway,
    loaded: LoadedModel,
    text: str,
    lesion: Interventions,
    names: list[str] | None,
    seed: int = 0,
    decoding: Decoding = GREEDY,
    max_new_tokens: int | None = None,
    check: Callable[[Trace], None] | None = None,
) -> LesionedRun:
    """The plain run, and the run under `lesion` unless it is no lesion; `check` sees the plain run first, so
    a lesion that does not fit it (a segment or step the input does not have) is refused before it runs."""
    plain = gateway.trace(loaded, text, NO_INTERVENTIONS, names, seed, decoding, max_new_tokens)
    if check is not None:
        check(plain)
    if lesion.is_noop():
        return LesionedRun(plain, None)
    return LesionedRun(plain, gateway.trace(loaded, text, lesion, names, seed, decoding, max_new_tokens))
