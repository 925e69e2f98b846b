"""JSON API of the FF memories (paper 003): a checkpoint's stored study,
key cards, and the logit lens of one input under key interventions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path

from app.figures.ff_views import key_cards, lens_table, prediction_changes
from app.routers.deps import RunnerDep
from app.schemas.api import COMMON_ERRORS, MODEL_ERRORS, errors
from app.schemas.ff import KeysRequest, KeysResponse, LensRequest, LensResponse
from app.schemas.validation import ModelName
from inference.analyses.ff_aggregation import logit_lens

router = APIRouter(prefix="/api/ff", tags=["api"], responses=COMMON_ERRORS)


@router.get("/{model}/study", response_model=dict[str, Any], responses=errors(404, 409))
def study(model: Annotated[ModelName, Path()], runner: RunnerDep) -> dict:
    """ff_analysis.json: mining corpus, agreement and aggregation per layer."""
    analysis = runner.ff(model)[1].analysis
    if analysis is None:
        raise HTTPException(
            404, f"no FF study is stored for {model}: run python -m training ff-memories checkpoints/{model}"
        )
    return analysis


@router.post("/keys", response_model=KeysResponse, responses=MODEL_ERRORS)
def keys(request: KeysRequest, runner: RunnerDep) -> dict:
    memories, stored = runner.ff(request.model)
    layer = runner.ff_layer(request.model, request.layer)
    cards, total = key_cards(
        memories,
        runner.model(request.model).tokenizer,
        stored.triggers,
        layer,
        request.order,
        request.offset,
        request.limit,
        request.keys,
        request.triggers,
    )
    return {"layer": layer, "order": request.order, "total": total, "keys": [asdict(card) for card in cards]}


@router.post("/lens", response_model=LensResponse, responses=MODEL_ERRORS)
def lens(request: LensRequest, runner: RunnerDep) -> dict:
    """Per position and layer: top keys by m_i ||v_i||, and the top tokens of
    the residual, the FF output and the layer output, in the run with the
    interventions; with interventions also the plain output and how every
    shared position's prediction changed."""
    memories, _ = runner.ff(request.model)
    tokenizer = runner.model(request.model).tokenizer
    plain, edited = runner.ff_runs(request.model, request.text, request.interventions)
    shown = edited or plain
    table = lens_table(logit_lens(shown, memories, top_keys=request.top_keys, top_tokens=request.top_tokens), tokenizer)
    result = {
        "output": shown.outputs[0],
        "interventions": request.interventions.model_dump(),
        "tokens": table.tokens,
        "layers": [
            {"layer": layer, "positions": [asdict(cell) for cell in cells]}
            for layer, cells in zip(table.layers, table.cells)
        ],
    }
    if edited is not None:
        result["plain_output"] = plain.outputs[0]
        result["prediction_changes"] = [
            asdict(change) for change in prediction_changes(plain, edited, memories.axis, tokenizer)
        ]
    return result
