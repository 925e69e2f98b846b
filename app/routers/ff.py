"""The FF memories page (paper 003): the study by layer, a key browser
(trigger examples and value tokens), the logit lens of one input, and live
key interventions. Works for the language model and for the decoder of
every translation model."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile

from app.figures.ff import study_figures
from app.figures.ff_views import (
    KEY_ORDERS,
    NEXT_TOKENS,
    TEXT_ORDERS,
    TRIGGER_LINES,
    KeyOrder,
    lens_row_html,
    token_html,
    trigger_lines,
)
from app.routers.deps import FFStudiesDep, GatewayDep, JobsDep, ModelFor
from app.routers.forms import EDIT_SYNTAX, parse_key_edits
from app.routers.jobs import go_to
from app.routers.rendering import figure_json, render
from app.schemas.ff import KeysRequest
from app.schemas.validation import FieldText, JobId, ModelName, Reference, parse_numbers
from app.services.ff import keys_page, run_ff
from app.services.ff_study import ff_layer, mining_job, study_command
from app.services.gating import PageModel, page_model
from app.services.jobs import MINED_TOP_K, MULTI30K_TEST
from app.services.pages import FF
from app.services.uploads import upload_or_set
from inference.core.bounds import MAX_INDEX, MAX_PICKED_KEYS
from inference.core.capabilities import Capability
from inference.core.interventions import Interventions

router = APIRouter(include_in_schema=False)
KEYS_PER_PAGE = 12
LENS_KEYS, LENS_TOKENS = 3, 3
KEY_STATUS_ID = r"^(key-status-[a-z0-9-]{1,80})?$"  # a key card's status line, answered out of band by /ff/run


FFModel = Annotated[PageModel, Depends(ModelFor(FF))]


@router.get("/ff")
def ff_page(
    request: Request,
    studies: FFStudiesDep,
    jobs: JobsDep,
    model: FFModel,
    text: Annotated[FieldText, Query()] = "",
    layer: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    edits: Annotated[FieldText, Query()] = "",
    mined: Annotated[JobId | None, Query()] = None,
):
    """model, text, layer, edits and a mining job's id (its triggers in the key browser) in the address reproduce a
    view."""
    memories, study = studies.of(model)
    ff_layer(memories, layer)
    mining = None if mined is None else mining_job(jobs.store, model, mined)
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
        orders=KEY_ORDERS if study.triggers is not None else [*TEXT_ORDERS, "index"],  # the others read triggers
        study_command=study_command(model.folder),
        continues_text=continues_text,
        input_language="English" if continues_text else model.record.source_language or "German",
        example=model.example,
        edit_syntax=EDIT_SYNTAX,
        mining=mining,
        server_sets=("demo", MULTI30K_TEST),
        mine_top_k=MINED_TOP_K,
    )


@router.get("/ff/keys")
def ff_keys(
    request: Request,
    gateway: GatewayDep,
    studies: FFStudiesDep,
    jobs: JobsDep,
    model: FFModel,
    layer: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    order: Annotated[KeyOrder, Query()] = "effect",
    page: Annotated[int, Query(ge=0, le=MAX_INDEX)] = 0,
    key: Annotated[str, Query(max_length=2000)] = "",
    mined: Annotated[JobId | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
):
    """One page of keys of one layer in the chosen order, or the key(s) typed in. Each card lists its
    key's top sentences by their stored context (the prefix's last tokens), identical contexts merged: the
    stored study's, or a mining job's (`mined`). The effect order reads the page's text, or with none entered
    the model's example (what a card's zero runs on)."""
    keys = list(parse_numbers(key, "key", MAX_PICKED_KEYS)) or None
    mining = None if mined is None else mining_job(jobs.store, model, mined)
    memories, study = studies.of(model, mining)
    every_trigger = study.triggers.top_k if study.triggers is not None else 0
    asked = KeysRequest(
        model=model.name,
        layer=layer,
        order=order,
        offset=page * KEYS_PER_PAGE,
        limit=KEYS_PER_PAGE,
        keys=keys,
        triggers=every_trigger,
        text=text or model.example,
    )
    found = keys_page(gateway, studies, model, asked, mining)
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
    shown = ff_layer(memories, layer)
    lesion = Interventions.of(*parse_key_edits(edits, memories.layers))
    run = run_ff(gateway, studies, model, text, lesion, LENS_KEYS, LENS_TOKENS, [shown])
    plain = run.runs.plain
    return render(
        request,
        "partials/ff_results.html",
        plain=plain,
        edited=run.runs.lesioned,
        interventions=lesion,
        diff=run.diff,
        lens=run.lens,  # of the one layer on view
        layer=layer,
        changes=run.changes,
        outcome=run.outcome,
        text=text,
        origin=origin,
        token_html=token_html,
        lens_row_html=lens_row_html,
        continues_text=model.can(Capability.GENERATES_TEXT),
    )


@router.post("/ff/mine")
async def ff_mine(
    request: Request,
    gateway: GatewayDep,
    jobs: JobsDep,
    model: Annotated[ModelName, Form()],
    file: Annotated[UploadFile | None, File()] = None,
    corpus: Annotated[Reference | None, Form()] = None,
):
    """Mine every key's trigger examples over an uploaded .txt/.tsv or a corpus the server has, as a job; its
    result page links the key browser with those triggers."""
    chosen = page_model(gateway, FF, model)  # refused before the file is read
    settings = request.app.state.settings
    upload = file if file is not None and file.filename else None  # a form's empty file field
    found = await upload_or_set(
        upload, corpus, jobs.reference_set, settings.max_upload_bytes, settings.max_upload_lines
    )
    job = jobs.submit_mining(chosen, found.filename, found.sources, found.references)
    return go_to(request, f"/results/{job.id}")
