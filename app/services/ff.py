"""The FF memories page's and /api/ff's runs (paper 003): a page of key cards of one layer, and the logit
lens of one input, plainly and under key edits, with every shared position's prediction change."""

from __future__ import annotations

from dataclasses import dataclass

from app.figures.ff_views import (
    TEXT_ORDERS,
    EditOutcome,
    KeyCard,
    LensTable,
    PredictionChange,
    edit_outcome,
    key_cards,
    lens_table,
    prediction_changes,
)
from app.schemas.ff import KeysRequest
from app.schemas.validation import InputError
from app.services.ff_study import FFStudies, FFStudy, ff_layer
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.lesioned import LesionedRun, plain_then_lesioned
from app.services.store import Job
from app.services.textdiff import DiffPart, word_diff
from inference.analyses.ff_aggregation import logit_lens
from inference.analyses.ff_effects import key_effects
from inference.core.capabilities import Capability
from inference.core.interventions import Interventions


@dataclass(frozen=True)
class KeysPage:
    layer: str  # the FF module
    cards: list[KeyCard]
    total: int  # keys in the ordering
    order: str  # as asked, or "index" where no triggers were mined to order by
    study: FFStudy


def keys_page(
    gateway: ModelGateway, studies: FFStudies, model: PageModel, request: KeysRequest, mined: Job | None = None
) -> KeysPage:
    """A page of key cards, their triggers the stored study's or those of a finished mining job (`mined`); in
    the "effect" order, the keys whose values this run of the text leans on most come first."""
    memories, study = studies.of(model, mined)
    layer = ff_layer(memories, request.layer)
    order = request.order
    if study.triggers is None and request.keys is None and order not in TEXT_ORDERS:
        order = "index"
    effects = None
    if order in TEXT_ORDERS and request.keys is None:
        if not request.text.strip():
            raise InputError(f"the {order} order ranks keys by a run of a text: give the text")
        plain = plain_then_lesioned(
            gateway,
            model.loaded,
            request.text,
            Interventions(),
            memories.capture_hooks(),
            max_new_tokens=ff_new_tokens(gateway, model),
        ).plain  # the run "One input" shows, from the same cache
        effects = gateway.exclusive(lambda: key_effects(plain, memories, layer))
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
        effects,
    )
    return KeysPage(layer, cards, total, order, study)


def ff_new_tokens(gateway: ModelGateway, model: PageModel) -> int:
    """The tokens the page decodes: a language model's default continuation, a translator's whole budget."""
    limits = gateway.limits
    return limits.continuation(None) if model.can(Capability.GENERATES_TEXT) else limits.max_new_tokens


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
    runs = plain_then_lesioned(
        gateway, model.loaded, text, edits, memories.capture_hooks(), max_new_tokens=ff_new_tokens(gateway, model)
    )
    tokenizer = model.loaded.tokenizer
    lensed = gateway.exclusive(lambda: logit_lens(runs.shown, memories, 0, top_keys, top_tokens, lens_layers))
    lens = lens_table(lensed, tokenizer)  # the lens's vocabulary products on the model thread, as a run's are
    diff = word_diff(runs.plain.outputs[0], runs.shown.outputs[0])
    if runs.lesioned is None:
        return FFRun(runs, lens, [], diff, None)
    changes = prediction_changes(runs.plain, runs.lesioned, memories.axis, tokenizer)
    return FFRun(runs, lens, changes, diff, edit_outcome(changes, runs.plain.outputs[0], runs.lesioned.outputs[0]))
