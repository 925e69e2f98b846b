"""The FF memories page's and /api/ff's runs (paper 003): a page of key cards of one layer, and the logit
lens of one input, plainly and under key edits, with every shared position's prediction change."""

from __future__ import annotations

from dataclasses import dataclass

from app.figures.ff_views import (
    EditOutcome,
    KeyCard,
    LensTable,
    PredictionChange,
    edit_outcome,
    key_cards,
    lens_table,
    prediction_changes,
)
from app.services.ff_study import FFStudies, FFStudy, ff_layer
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.lesioned import LesionedRun, plain_then_lesioned
from app.services.store import Job
from app.services.textdiff import DiffPart, word_diff
from inference.analyses.ff_aggregation import logit_lens
from inference.core.capabilities import Capability
from inference.core.interventions import Interventions


@dataclass(frozen=True)
class KeysRequest:
    layer: int
    order: str  # one of KEY_ORDERS
    offset: int
    limit: int
    keys: list[int] | None  # these keys instead of a page of the ordering
    triggers: int  # trigger examples per card


@dataclass(frozen=True)
class KeysPage:
    layer: str  # the FF module
    cards: list[KeyCard]
    total: int  # keys in the ordering
    order: str  # as asked, or "index" where no triggers were mined to order by
    study: FFStudy


def keys_page(studies: FFStudies, model: PageModel, request: KeysRequest, mined: Job | None = None) -> KeysPage:
    """A page of key cards, their triggers the stored study's or those of a finished mining job (`mined`)."""
    memories, study = studies.of(model, mined)
    layer = ff_layer(memories, request.layer)
    order = "index" if study.triggers is None and request.keys is None else request.order
    cards, total = key_cards(
        memories,
        model.loaded.tokenizer,
        study.triggers,
        layer,
        order,
        request.offset,
        request.limit,
        request.keys,
        request.triggers,
    )
    return KeysPage(layer, cards, total, order, study)


@dataclass(frozen=True)
class FFRun:
    runs: LesionedRun  # lesioned: the run under the key edits
    lens: LensTable  # of the shown run
    changes: list[PredictionChange]  # every shared position's prediction, plain against edited
    diff: list[DiffPart]  # the edited output's words against the plain one's
    outcome: EditOutcome | None  # what the edits did; None without edits


def run_ff(
    gateway: ModelGateway,
    studies: FFStudies,
    model: PageModel,
    text: str,
    edits: Interventions,
    top_keys: int,
    top_tokens: int,
    lens_layers: list[str] | None = None,
) -> FFRun:
    """The language model on the text and its greedy continuation, or a translation model's decoder on its own
    translation, plainly and under `edits`, with the hooks of the aggregation and the logit lens of `lens_layers`
    (None: every FF layer)."""
    memories, _ = studies.of(model)
    limits = gateway.limits
    new_tokens = limits.continuation(None) if model.can(Capability.GENERATES_TEXT) else limits.max_new_tokens
    runs = plain_then_lesioned(gateway, model.loaded, text, edits, memories.capture_hooks(), max_new_tokens=new_tokens)
    tokenizer = model.loaded.tokenizer
    lensed = gateway.exclusive(lambda: logit_lens(runs.shown, memories, 0, top_keys, top_tokens, lens_layers))
    lens = lens_table(lensed, tokenizer)  # the lens's vocabulary products on the model thread, as a run's are
    diff = word_diff(runs.plain.outputs[0], runs.shown.outputs[0])
    if runs.lesioned is None:
        return FFRun(runs, lens, [], diff, None)
    changes = prediction_changes(runs.plain, runs.lesioned, memories.axis, tokenizer)
    return FFRun(runs, lens, changes, diff, edit_outcome(changes, runs.plain.outputs[0], runs.lesioned.outputs[0]))
