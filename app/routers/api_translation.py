"""JSON API of the translation models: translations, attention, attribution, block mass, and several
models compared on one sentence. OpenAPI at /docs."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter

from app.figures.attention import quantize_percent
from app.routers.deps import RunnerDep
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
    DecodedTextRequest,
    TranslationResponse,
)
from app.schemas.arrays import binary_array
from app.schemas.validation import InputError
from app.services.pages import COMPARE
from inference.analyses.attention import call_indices, layer_attention
from inference.analyses.blocks import attention_blocks
from inference.core.interventions import Interventions

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


@router.post("/translate", response_model=TranslationResponse, responses=MODEL_ERRORS)
def translate(request: DecodedTextRequest, runner: RunnerDep) -> dict:
    return asdict(runner.translate(request.model, request.text, request.interventions, request.decoding))


@router.post("/attention", response_model=AttentionResponse, responses=MODEL_ERRORS)
def attention(request: AttentionRequest, runner: RunnerDep) -> dict:
    """One layer of one stack: weights [heads, q, k] as uint8 percent."""
    name = runner.pattern_hook(request.model, request.stack, request.layer)
    trace = runner.trace(request.model, request.text, request.interventions, names=[name], decoding=request.decoding)
    calls = call_indices(trace.captures[name])
    if request.at not in calls:
        raise InputError(f"{name} has no call {request.at or 'without an index'}; its calls: {calls}")
    view = layer_attention(trace, request.stack, request.layer, **request.at)
    return {
        "stack": view.stack,
        "layer": view.layer,
        "at": request.at,
        "calls": calls,
        "translation": trace.outputs[0],
        "query_tokens": view.query_tokens,
        "key_tokens": view.key_tokens,
        "query_roles": view.query_roles,
        "key_roles": view.key_roles,
        "weights": {**binary_array(quantize_percent(view.weights)), "unit": "percent"},
    }


@router.post("/attribution", response_model=AttributionResponse, responses=MODEL_ERRORS)
def attribution(request: AttributionRequest, runner: RunnerDep) -> dict:
    """Integrated gradients and saliency of one output token onto source tokens and memory slots."""
    return asdict(
        runner.attribution(request.model, request.text, request.position, request.interventions, request.decoding)
    )


@router.post("/compare", response_model=CompareResponse, responses=MODEL_ERRORS)
def compare(request: CompareRequest, runner: RunnerDep) -> dict:
    """One sentence through several models: translations and block mass, aligned."""
    rows = []
    for model in request.models:
        runner.model_for(model, COMPARE)
    for model in dict.fromkeys(request.models):
        trace = runner.trace(model, request.text, Interventions(), names=["*.pattern"], decoding=request.decoding)
        rows.append(
            {
                "model": model,
                "translation": trace.outputs[0],
                "blocks": [asdict(b) for b in attention_blocks(trace)],
            }
        )
    return {"text": request.text, "models": rows}


@router.post("/blocks", response_model=BlocksResponse, responses=MODEL_ERRORS)
def blocks(request: DecodedTextRequest, runner: RunnerDep) -> dict:
    return {
        "blocks": [
            asdict(b) for b in runner.blocks(request.model, request.text, request.interventions, request.decoding)
        ]
    }
