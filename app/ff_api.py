"""JSON API of the FF memories (paper 003): a checkpoint's stored study,
key cards, and the logit lens of one input under key interventions."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.deps import RunnerDep
from app.ff_views import KEY_ORDERS, MAX_PICKED_KEYS, key_cards, lens_table, prediction_changes
from app.schemas import COMMON_ERRORS, MODEL_ERRORS, errors
from app.validation import MAX_INDEX, FieldText, ModelName
from inference.analyses.ff_aggregation import logit_lens
from inference.interventions import Interventions

router = APIRouter(prefix="/api/ff", tags=["api"], responses=COMMON_ERRORS)


class KeysRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"model": "language_model", "layer": 5, "limit": 5}]}
    )
    model: ModelName
    layer: int = Field(
        0,
        ge=0,
        le=MAX_INDEX,
        description="FF layer index (the language model's layers, or a translation model's decoder layers)",
    )
    order: Literal[KEY_ORDERS] = Field("agreement")
    offset: int = Field(0, ge=0, le=1_000_000)
    limit: int = Field(20, ge=1, le=200)
    keys: list[Annotated[int, Field(ge=0, le=1_000_000)]] | None = Field(
        None,
        max_length=MAX_PICKED_KEYS,
        description="these keys, in this order, instead of a page of the ordering (duplicates dropped)",
    )
    triggers: int = Field(10, ge=0, le=50, description="trigger examples per key")

    @field_validator("keys")
    @classmethod
    def _unique_keys(cls, keys: list[int] | None) -> list[int] | None:
        return None if keys is None else list(dict.fromkeys(keys))


class KeysResponse(BaseModel):
    layer: str
    order: str
    total: int
    keys: list[dict[str, Any]]


class LensResponse(BaseModel):
    output: str
    interventions: dict[str, Any]
    tokens: list[str]
    layers: list[dict[str, Any]]
    plain_output: str | None = None
    prediction_changes: list[dict[str, Any]] | None = None


class LensRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"model": "language_model", "text": "The river flows into the"}]},
    )
    model: ModelName
    text: FieldText = Field(
        description="English text for the language model; a source sentence for a translation model"
    )
    interventions: Interventions = Field(
        default_factory=Interventions, description="e.g. scale_ff_keys to zero or boost keys"
    )
    top_keys: int = Field(5, ge=1, le=50)
    top_tokens: int = Field(5, ge=1, le=50)


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
        "output": shown.translations[0],
        "interventions": request.interventions.model_dump(),
        "tokens": table.tokens,
        "layers": [
            {"layer": layer, "positions": [asdict(cell) for cell in cells]}
            for layer, cells in zip(table.layers, table.cells)
        ],
    }
    if edited is not None:
        result["plain_output"] = plain.translations[0]
        result["prediction_changes"] = [
            asdict(change) for change in prediction_changes(plain, edited, memories.axis, tokenizer)
        ]
    return result
