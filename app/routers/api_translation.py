"""JSON API of the translation and attention models: translations, the Explore page's run, one layer's attention,
attribution, block mass, several models compared on one sentence, and the Segments page's run. Each answer is
the page's own service's (app/services/). OpenAPI at /docs."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends

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
    LayerAttentionResponse,
    LesionedResponse,
    SegmentsRequest,
    SegmentsResponse,
    TranslationResponse,
)
from app.services import explore as explore_service
from app.services import segments as segments_service
from app.services import translation as translation_service
from app.services.gating import PageModel, page_model
from app.services.lesioned import LesionedRun
from app.services.pages import ATTENTION, ATTRIBUTION, COMPARE, EXPLORE, SEGMENTS, TRANSLATION

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)
TranslationModel = Annotated[PageModel, Depends(ModelFor(TRANSLATION))]
Lesioned = TypeVar("Lesioned", bound=LesionedResponse)


def lesioned(response: type[Lesioned], runs: LesionedRun, note: str, **fields: Any) -> Lesioned:
    """A lesioned view's answer: the output with and without the interventions, the interventions (as
    normalised) and, in words, what they changed; then the view's own `fields`."""
    return response(
        output=runs.shown.outputs[0],
        plain_output=runs.plain.outputs[0],
        interventions=runs.shown.run.interventions,
        note=note,
        **fields,
    )


@router.post("/translate", response_model=TranslationResponse, responses=MODEL_ERRORS)
def translate(request: DecodedTextRequest, gateway: GatewayDep, model: TranslationModel) -> TranslationResponse:
    found = translation_service.translate(gateway, model, request.text, request.interventions, request.decoding)
    return TranslationResponse.model_validate(found, from_attributes=True)


@router.post("/explore", response_model=ExploreResponse, responses=MODEL_ERRORS)
def explore(
    request: ExploreRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(EXPLORE))]
) -> ExploreResponse:
    """The Explore page's run: the model plainly and under the interventions, the attention of one call of one
    layer, every head's block mass and what each head of the stack does with memory (of the run under the
    interventions), and the interventions in words with what they changed."""
    run = explore_service.run_explore(gateway, model, request)
    return lesioned(
        ExploreResponse,
        run.runs,
        run.note,
        calls=len(run.calls),
        attention=LayerAttentionResponse.of(run.view, index=run.view.index),
        blocks=run.blocks,
        operations=run.operations,
    )


@router.post("/attention", response_model=AttentionResponse, responses=MODEL_ERRORS)
def attention(
    request: AttentionRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(ATTENTION))]
) -> AttentionResponse:
    """One layer of one stack: weights [heads, q, k] as uint8 percent."""
    trace, view, calls = explore_service.one_layer(gateway, model, request)
    return AttentionResponse.of(view, at=request.at, calls=calls, translation=trace.outputs[0])


@router.post("/attribution", response_model=AttributionResponse, responses=MODEL_ERRORS)
def attribution(
    request: AttributionRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(ATTRIBUTION))]
) -> AttributionResponse:
    """Integrated gradients and saliency of one output token onto source tokens and memory slots."""
    found = explore_service.attribution(gateway, model, request)
    return AttributionResponse.model_validate(found, from_attributes=True)


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
    return lesioned(
        SegmentsResponse,
        run.runs,
        run.note,
        starts=run.spans.starts,
        lengths=run.spans.lengths,
        plain_hits=run.plain_hits.hits if run.plain_hits else None,
        lesioned_hits=run.lesioned_hits.hits if run.lesioned_hits else None,
        attention=LayerAttentionResponse.of(run.view, index=run.view.index),
        operations=run.operations,
    )
