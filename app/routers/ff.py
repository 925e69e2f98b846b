"""The FF memories page (paper 003): the study by layer, a key browser
(trigger examples and value tokens), the logit lens of one input, and live
key interventions. Works for the language model and for the decoder of
every translation model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request

from app.figures.ff import study_figures
from app.figures.ff_views import (
    KEY_ORDERS,
    NEXT_TOKENS,
    TRIGGER_LINES,
    KeyOrder,
    token_html,
    trigger_lines,
)
from app.routers.deps import FFStudiesDep, GatewayDep, ModelFor
from app.routers.forms import EDIT_SYNTAX, parse_key_edits
from app.routers.rendering import figure_json, render
from app.schemas.validation import FieldText, parse_numbers
from app.services.ff import KeysRequest, keys_page, run_ff
from app.services.ff_study import ff_layer
from app.services.gating import PageModel
from app.services.pages import FF
from inference.core.bounds import MAX_INDEX, MAX_PICKED_KEYS
from inference.core.capabilities import Capability
from inference.core.controls import LesionControls

router = APIRouter(include_in_schema=False)
KEYS_PER_PAGE = 12
LENS_KEYS, LENS_TOKENS = 3, 3
KEY_STATUS_ID = r"^(key-status-[a-z0-9-]{1,80})?$"  # a key card's status line, answered out of band by /ff/run


FFModel = Annotated[PageModel, Depends(ModelFor(FF))]


@router.get("/ff")
def ff_page(
    request: Request,
    studies: FFStudiesDep,
    model: FFModel,
    text: Annotated[FieldText, Query()] = "",
    layer: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    edits: Annotated[FieldText, Query()] = "",
):
    """model, text, layer and edits in the address reproduce a view."""
    memories, study = studies.of(model)
    ff_layer(memories, layer)
    figures = (
        {name: figure_json(figure) for name, figure in study_figures(study.analysis).items()} if study.analysis else {}
    )
    continues_text = model.can(Capability.GENERATES_TEXT)
    return render(
        request,
        "pages/ff.html",
        models=model.offered,
        model=model.name,
        text=text,
        layer=layer,
        edits=edits,
        layers=memories.layers,
        study=study,
        figures=figures,
        orders=KEY_ORDERS,
        continues_text=continues_text,
        input_language="English" if continues_text else model.meta.get("source_language", "German"),
        example=model.example,
        edit_syntax=EDIT_SYNTAX,
    )


@router.get("/ff/keys")
def ff_keys(
    request: Request,
    studies: FFStudiesDep,
    model: FFModel,
    layer: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    order: Annotated[KeyOrder, Query()] = "agreement",
    page: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    key: Annotated[str, Query(max_length=2000)] = "",
):
    """One page of keys of one layer in the chosen order, or the key(s) typed in. Each card lists its
    key's top sentences by their stored context (the prefix's last tokens), identical contexts merged."""
    keys = list(parse_numbers(key, "key", MAX_PICKED_KEYS)) or None
    memories, study = studies.of(model)
    every_trigger = study.triggers.top_k if study.triggers is not None else 0
    found = keys_page(
        studies, model, KeysRequest(layer, order, page * KEYS_PER_PAGE, KEYS_PER_PAGE, keys, every_trigger)
    )
    return render(
        request,
        "partials/ff_keys.html",
        cards=[(card, trigger_lines(card.triggers, TRIGGER_LINES)) for card in found.cards],
        context_tokens=study.triggers.context_tokens if study.triggers is not None else None,
        next_tokens=NEXT_TOKENS,
        token_html=token_html,
        total=found.total,
        page=page,
        pages=-(-found.total // KEYS_PER_PAGE),
        order=found.order,
        picked=keys is not None,
        mined=study.triggers is not None,
    )


@router.post("/ff/run")
def ff_run(
    request: Request,
    gateway: GatewayDep,
    studies: FFStudiesDep,
    model: FFModel,
    text: Annotated[FieldText, Form()] = "",
    layer: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    edits: Annotated[FieldText, Form()] = "",
    origin: Annotated[str, Form(pattern=KEY_STATUS_ID)] = "",
):
    """The plain run and, with key edits, the edited one; the lens follows the edited run. `origin`
    names the status line of the key card whose zero / boost asked for the run: it gets the outcome
    in a line (an out-of-band swap), so the answer shows where the user clicked."""
    memories, _ = studies.of(model)
    ff_layer(memories, layer)
    lesion = model.lesion(LesionControls(scales=tuple(parse_key_edits(edits, memories.layers))))
    run = run_ff(gateway, studies, model, text, lesion, LENS_KEYS, LENS_TOKENS)
    plain = run.runs.plain
    return render(
        request,
        "partials/ff_results.html",
        plain=plain,
        edited=run.runs.lesioned,
        interventions=lesion,
        diff=run.diff,
        lens=run.lens,
        layer=layer,
        changes=run.changes,
        outcome=run.outcome,
        text=text,
        origin=origin,
        token_html=token_html,
        continues_text=model.can(Capability.GENERATES_TEXT),
    )
