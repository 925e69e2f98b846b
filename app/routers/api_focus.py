"""JSON API of source attribution: where a model looks in its source, by integrated gradients and attention."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from app.routers.deps import GatewayDep, ModelFor
from app.schemas.api import COMMON_ERRORS, MODEL_ERRORS, FocusRequest, FocusResponse
from app.services.focus import model_focus
from app.services.gating import PageModel
from app.services.pages import FOCUS

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


@router.post("/focus", response_model=FocusResponse, responses=MODEL_ERRORS)
def focus(
    request: FocusRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(FOCUS))]
) -> FocusResponse:
    """Integrated gradients (Captum's path and weights) of every token of the model's greedy output onto its
    embedded source tokens, from a zero source, and the attention of a model that attends to its source (at most
    24 source and 24 output tokens: each output token runs the model backward `steps` times)."""
    found = model_focus(gateway, model, request.text, request.steps)
    view, attribution = found.focus, found.attribution
    return FocusResponse(
        output=found.output,
        output_tokens=view.output_tokens,
        source_tokens=view.source_tokens,
        integrated_gradients=attribution.integrated_gradients,
        convergence_delta=attribution.convergence_delta,
        attribution_share=view.attribution_share,
        attention=view.attention,
        attention_stack=found.attention_stack,
        peak_attribution=view.peak_attribution,
        peak_attention=view.peak_attention,
        agreement=view.agreement,
    )
