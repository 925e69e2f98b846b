"""JSON API of the translation and attention models: translations, the Explore page's run, one layer's attention,
attribution, block mass, several models compared on one sentence, and the Segments page's run. Each answer is
the page's own service's (app/services/). OpenAPI at /docs."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Depends

from app.figures.attention import quantize_percent
from app.routers.deps import GatewayDep, ModelFor
from app.schemas.api import (
    COMMON_ERRORS,
    MODEL_ERRORS,
    AttentionRequest,
    AttentionResponse,
    AttributionRequest,
    AttributionResponse,
    BlocksResponse,
    CompareRequest,
    CompareResponse,
    CompareRow,
    DecodedTextRequest,
    ExploreRequest,
    ExploreResponse,
    SegmentsRequest,
    SegmentsResponse,
    TranslationResponse,
)
from app.schemas.arrays import binary_array
from app.services import explore as explore_service
from app.services import segments as segments_service
from app.services import translation as translation_service
from app.services.gating import PageModel, page_model
from app.services.lesioned import LesionedRun
from app.services.pages import ATTENTION, ATTRIBUTION, COMPARE, EXPLORE, SEGMENTS, TRANSLATION
from inference.analyses.attention import LayerAttention

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)
TranslationModel = Annotated[PageModel, Depends(ModelFor(TRANSLATION))]


def attention_json(view: LayerAttention) -> dict:
    """One call of one layer: tokens and roles of both axes, weights [heads, q, k] as uint8 percent."""
    return {
        "stack": view.stack,
        "layer": view.layer,
        "index": view.index,
        "query_tokens": view.query_tokens,
        "key_tokens": view.key_tokens,
        "query_roles": [str(role) for role in view.query_roles],
        "key_roles": [str(role) for role in view.key_roles],
        "query_axis_role": view.query_axis_role,
        "key_axis_role": view.key_axis_role,
        "weights": {**binary_array(quantize_percent(view.weights)), "unit": "percent"},
    }


def lesioned_json(runs: LesionedRun, note: str) -> dict:
    """What every lesioned view answers first: the output with and without the lesion, the lesion (as
    normalised) and, in words, what it changed."""
    return {
        "output": runs.shown.outputs[0],
        "plain_output": runs.plain.outputs[0],
        "interventions": runs.shown.run.interventions,
        "note": note,
    }


@router.post("/translate", response_model=TranslationResponse, responses=MODEL_ERRORS)
def translate(request: DecodedTextRequest, gateway: GatewayDep, model: TranslationModel) -> dict:
    return asdict(translation_service.translate(gateway, model, request.text, request.interventions, request.decoding))


@router.post("/explore", response_model=ExploreResponse, responses=MODEL_ERRORS)
def explore(
    request: ExploreRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(EXPLORE))]
) -> ExploreResponse:
    """The Explore page's run: the model plainly and under the interventions, the attention of one call of one
    layer, every head's block mass and what each head of the stack does with memory (of the run under the
    interventions), and the interventions in words with what they changed."""
    run = explore_service.run_explore(gateway, model, request)
    return ExploreResponse(
        **lesioned_json(run.runs, run.note),
        calls=len(run.calls),
        attention=attention_json(run.view),
        blocks=run.blocks,
        operations=run.operations,
    )


@router.post("/attention", response_model=AttentionResponse, responses=MODEL_ERRORS)
def attention(
    request: AttentionRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(ATTENTION))]
) -> dict:
    """One layer of one stack: weights [heads, q, k] as uint8 percent."""
    trace, view, calls = explore_service.one_layer(gateway, model, request)
    found = attention_json(view)
    del found["index"]
    return {**found, "at": request.at, "calls": calls, "translation": trace.outputs[0]}


@router.post("/attribution", response_model=AttributionResponse, responses=MODEL_ERRORS)
def attribution(
    request: AttributionRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(ATTRIBUTION))]
) -> dict:
    """Integrated gradients and saliency of one output token onto source tokens and memory slots."""
    return asdict(explore_service.attribution(gateway, model, request))


@router.post("/compare", response_model=CompareResponse, responses=MODEL_ERRORS)
def compare(request: CompareRequest, gateway: GatewayDep) -> CompareResponse:
    """One sentence through several models: translations and block mass, aligned."""
    models = [page_model(gateway, COMPARE, name) for name in request.models]
    rows = translation_service.compare(gateway, models, request.text, request.decoding)
    return CompareResponse(
        text=request.text,
        models=[CompareRow(model=row.model, translation=row.trace.outputs[0], blocks=row.blocks) for row in rows],
    )


@router.post("/blocks", response_model=BlocksResponse, responses=MODEL_ERRORS)
def blocks(
    request: DecodedTextRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(ATTENTION))]
) -> BlocksResponse:
    _, found = translation_service.blocks(gateway, model, request.text, request.interventions, request.decoding)
    return BlocksResponse(blocks=found)


@router.post("/segments", response_model=SegmentsResponse, responses=MODEL_ERRORS)
def segments(
    request: SegmentsRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(SEGMENTS))]
) -> SegmentsResponse:
    """The Segments page's run: where the segments lie, which next tokens the plain and the lesioned run get
    right, one segment's attention (of the run under the interventions) and what each head does with memory."""
    run = segments_service.run_segments(gateway, model, request)
    return SegmentsResponse(
        **lesioned_json(run.runs, run.note),
        starts=run.spans.starts,
        lengths=run.spans.lengths,
        plain_hits=run.plain_hits.hits if run.plain_hits else None,
        lesioned_hits=run.lesioned_hits.hits if run.lesioned_hits else None,
        attention=attention_json(run.view),
        operations=run.operations,
    )
