"""The FF memories page (paper 003): the study by layer, a key browser
(trigger examples and value tokens), the logit lens of one input, and live
key interventions. Works for the language model and for the decoder of
every translation model."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Query, Request

from app.figures.ff import study_figures
from app.figures.ff_views import (
    KEY_ORDERS,
    MAX_PICKED_KEYS,
    NEXT_TOKENS,
    TRIGGER_LINES,
    edit_outcome,
    key_cards,
    lens_table,
    prediction_changes,
    token_html,
    trigger_lines,
)
from app.routers.deps import RunnerDep
from app.routers.forms import EDIT_SYNTAX, parse_key_edits
from app.routers.rendering import figure_json, render
from app.schemas.validation import MAX_INDEX, FieldText, ModelName, parse_numbers
from app.services.examples import example_input
from app.services.pages import FF
from app.services.textdiff import word_diff
from inference.analyses.ff_aggregation import logit_lens
from inference.core.capabilities import Capability
from inference.core.interventions import Interventions

router = APIRouter(include_in_schema=False)
KEYS_PER_PAGE = 12
LENS_KEYS, LENS_TOKENS = 3, 3
KEY_STATUS_ID = r"^(key-status-[a-z0-9-]{1,80})?$"  # a key card's status line, answered out of band by /ff/run


@router.get("/ff")
def ff_page(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
    layer: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    edits: Annotated[FieldText, Query()] = "",
):
    """model, text, layer and edits in the address reproduce a view."""
    available, model = runner.page_models(model, FF)
    memories, study = runner.ff(model)
    runner.ff_layer(model, layer)
    loaded = runner.model(model)
    figures = (
        {name: figure_json(figure) for name, figure in study_figures(study.analysis).items()} if study.analysis else {}
    )
    continues_text = Capability.GENERATES_TEXT in runner.capabilities(model)
    return render(
        request,
        "pages/ff.html",
        models=available,
        model=model,
        text=text,
        layer=layer,
        edits=edits,
        layers=memories.layers,
        study=study,
        figures=figures,
        orders=KEY_ORDERS,
        continues_text=continues_text,
        input_language="English" if continues_text else loaded.meta.get("source_language", "German"),
        example=example_input(runner.registry.entries[model]),
        edit_syntax=EDIT_SYNTAX,
    )


@router.get("/ff/keys")
def ff_keys(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName, Query()],
    layer: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    order: Annotated[Literal[KEY_ORDERS], Query()] = "agreement",
    page: Annotated[int, Query(ge=0, le=100_000)] = 0,
    key: Annotated[str, Query(max_length=2000)] = "",
):
    """One page of keys of one layer in the chosen order, or the key(s) typed in. Each card lists its
    key's top sentences by their stored context (the prefix's last tokens), identical contexts merged."""
    memories, study = runner.ff(model)
    name = runner.ff_layer(model, layer)
    keys = list(parse_numbers(key, "key", MAX_PICKED_KEYS)) or None
    if study.triggers is None and keys is None:
        order = "index"
    every_trigger = study.triggers.top_k if study.triggers is not None else 0
    cards, total = key_cards(
        memories,
        runner.model(model).tokenizer,
        study.triggers,
        name,
        order,
        page * KEYS_PER_PAGE,
        KEYS_PER_PAGE,
        keys,
        every_trigger,
    )
    return render(
        request,
        "partials/ff_keys.html",
        cards=[(card, trigger_lines(card.triggers, TRIGGER_LINES)) for card in cards],
        context_tokens=study.triggers.context_tokens if study.triggers is not None else None,
        next_tokens=NEXT_TOKENS,
        token_html=token_html,
        total=total,
        page=page,
        pages=-(-total // KEYS_PER_PAGE),
        order=order,
        picked=keys is not None,
        mined=study.triggers is not None,
    )


@router.post("/ff/run")
def ff_run(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName, Form()],
    text: Annotated[FieldText, Form()] = "",
    layer: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    edits: Annotated[FieldText, Form()] = "",
    origin: Annotated[str, Form(pattern=KEY_STATUS_ID)] = "",
):
    """The plain run and, with key edits, the edited one; the lens follows the edited run. `origin`
    names the status line of the key card whose zero / boost asked for the run: it gets the outcome
    in a line (an out-of-band swap), so the answer shows where the user clicked."""
    memories, _ = runner.ff(model)
    interventions = Interventions.of(*parse_key_edits(edits, memories.layers))
    runner.ff_layer(model, layer)
    loaded = runner.model(model)
    plain, edited = runner.ff_runs(model, text, interventions)
    shown = edited or plain
    lens = lens_table(logit_lens(shown, memories, top_keys=LENS_KEYS, top_tokens=LENS_TOKENS), loaded.tokenizer)
    changes = prediction_changes(plain, edited, memories.axis, loaded.tokenizer) if edited is not None else []
    return render(
        request,
        "partials/ff_results.html",
        plain=plain,
        edited=edited,
        interventions=interventions,
        diff=word_diff(plain.outputs[0], shown.outputs[0]),
        lens=lens,
        layer=layer,
        changes=changes,
        outcome=edit_outcome(changes, plain.outputs[0], shown.outputs[0]) if edited is not None else None,
        text=text,
        origin=origin,
        token_html=token_html,
        continues_text=Capability.GENERATES_TEXT in runner.capabilities(model),
    )
