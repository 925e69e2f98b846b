"""JSON API of the FF memories (paper 003): a checkpoint's stored study, key cards, and the logit lens of one
input under key interventions, as the FF memories page shows them (app/services/ff.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, HTTPException, Request, UploadFile

from app.routers.api_jobs import job_response
from app.routers.deps import FFStudiesDep, GatewayDep, JobsDep, ModelFor, ModelInPathFor
from app.schemas.api import COMMON_ERRORS, MODEL_ERRORS, JobResponse, errors
from app.schemas.ff import KeysRequest, KeysResponse, LensLayerCells, LensRequest, LensResponse, StudyResponse
from app.schemas.validation import ModelName, Reference
from app.services import ff
from app.services.ff_study import ff_layer, mining_job, study_command
from app.services.gating import PageModel, page_model
from app.services.pages import FF
from app.services.uploads import upload_or_set

router = APIRouter(prefix="/api/ff", tags=["api"], responses=COMMON_ERRORS)
FFModel = Annotated[PageModel, Depends(ModelFor(FF))]


@router.get("/{model}/study", response_model=StudyResponse, responses=errors(404, 409))
def study(model: Annotated[PageModel, Depends(ModelInPathFor(FF))], studies: FFStudiesDep) -> StudyResponse:
    """ff_analysis.json: mining corpus, agreement and aggregation per layer."""
    analysis = studies.of(model)[1].analysis
    if analysis is None:
        raise HTTPException(404, f"no FF study is stored for {model.name}: run {study_command(model.folder)}")
    return StudyResponse.model_validate(analysis)


@router.post("/keys", response_model=KeysResponse, responses=MODEL_ERRORS)
def keys(
    request: KeysRequest, gateway: GatewayDep, studies: FFStudiesDep, jobs: JobsDep, model: FFModel
) -> KeysResponse:
    """Key cards of one layer; their triggers the stored study's, or a finished mining job's (`mined`); in the
    effect order, each card's effect on the run of `text`."""
    mined = None if request.mined is None else mining_job(jobs.store, model, request.mined)
    found = ff.keys_page(gateway, studies, model, request, mined)
    return KeysResponse(layer=found.layer, order=found.order, total=found.total, keys=found.cards)


@router.post("/lens", response_model=LensResponse, responses=MODEL_ERRORS)
def lens(request: LensRequest, gateway: GatewayDep, studies: FFStudiesDep, model: FFModel) -> LensResponse:
    """Per position and layer (or the one `layer`): top keys by m_i ||v_i||, and the top tokens of
    the residual, the FF output and the layer output, in the run with the
    interventions; with interventions also the plain output and how every
    shared position's prediction changed."""
    memories, _ = studies.of(model)
    layers = None if request.layer is None else [ff_layer(memories, request.layer)]
    run = ff.run_ff(
        gateway, studies, model, request.text, request.interventions, request.top_keys, request.top_tokens, layers
    )
    table = run.lens
    edited = run.runs.lesioned is not None
    return LensResponse(
        output=run.runs.shown.outputs[0],
        interventions=request.interventions,
        tokens=table.tokens,
        layers=[LensLayerCells(layer=layer, positions=cells) for layer, cells in zip(table.layers, table.cells)],
        plain_output=run.runs.plain.outputs[0] if edited else None,
        prediction_changes=run.changes if edited else None,
    )


@router.post("/mining", response_model=JobResponse, responses=MODEL_ERRORS)
async def mining(
    request: Request,
    gateway: GatewayDep,
    jobs: JobsDep,
    model: Annotated[ModelName, Form()],
    file: Annotated[UploadFile | None, File(description="a .txt (a text per line) or .tsv (source<TAB>target)")] = None,
    corpus: Annotated[Reference | None, Form()] = None,
) -> JobResponse:
    """Mine every FF key's trigger examples over an uploaded corpus or one the server has (exactly one), in the
    background; poll /api/jobs/{id}, then read the keys with `mined` = the job's id in /api/ff/keys."""
    chosen = page_model(gateway, FF, model)  # refused before the file is read
    settings = request.app.state.settings
    found = await upload_or_set(file, corpus, jobs.reference_set, settings.max_upload_bytes, settings.max_upload_lines)
    return job_response(jobs.submit_mining(chosen, found.filename, found.sources, found.references))
