"""Request and response bodies of the FF memories' JSON API (/api/ff): key cards and the logit lens."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.figures.ff_views import KeyCard, KeyOrder, LensCell, PredictionChange
from app.schemas.validation import FieldText, JobId, ModelName
from inference.analyses.ff_aggregation import LayerSummary
from inference.core.bounds import MAX_INDEX, MAX_PAGE_SIZE, MAX_PICKED_KEYS, MAX_TOP
from inference.core.interventions import Interventions


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
    order: KeyOrder = Field(
        "agreement",
        description="agreement, coefficient (both from mined triggers), index, or effect: the keys whose values a "
        "run of `text` leans on most (each key's largest direct share of a prediction's margin), first",
    )
    text: FieldText = Field("", description="the text the effect order runs the model on")
    offset: int = Field(0, ge=0, le=MAX_INDEX)
    limit: int = Field(20, ge=1, le=MAX_PAGE_SIZE)
    keys: list[Annotated[int, Field(ge=0, le=MAX_INDEX)]] | None = Field(
        None,
        max_length=MAX_PICKED_KEYS,
        description="these keys, in this order, instead of a page of the ordering (duplicates dropped)",
    )
    triggers: int = Field(10, ge=0, le=MAX_TOP, description="trigger examples per key")
    mined: JobId | None = Field(None, description="a finished mining job of this model: its triggers, not the stored")

    @field_validator("keys")
    @classmethod
    def _unique_keys(cls, keys: list[int] | None) -> list[int] | None:
        return None if keys is None else list(dict.fromkeys(keys))


class KeysResponse(BaseModel):
    layer: str
    order: str
    total: int
    keys: list[KeyCard] = Field(description="a card of each key: its value's top tokens, its trigger examples")


class LensLayerCells(BaseModel):
    layer: str = Field(description="the FF module")
    positions: list[LensCell] = Field(description="a cell of each position of `tokens`")


class LensResponse(BaseModel):
    output: str
    interventions: Interventions
    tokens: list[str]
    layers: list[LensLayerCells]
    plain_output: str | None = Field(None, description="the output without the interventions; null without them")
    prediction_changes: list[PredictionChange] | None = Field(
        None, description="every shared position's prediction, plain against edited; null without interventions"
    )


class StudyMining(BaseModel):
    corpus: str
    sentences: int
    top_k: int = Field(description="trigger examples kept per key")
    sentences_per_second: float


class StudyAggregation(BaseModel):
    sentences: int
    seconds: float
    layers: list[LayerSummary]


class StudyResponse(BaseModel):
    """A checkpoint's ff_analysis.json, as its study wrote it."""

    model: str
    mining: StudyMining = Field(description="the corpus the keys' trigger examples were mined on")
    agreement: list[dict[str, str | int | float]] = Field(
        description="per layer: how often a key's value predicts its triggers' next token (the paper's agreement), "
        "against keys paired at random, and the ranks of that token"
    )
    aggregation: StudyAggregation = Field(description="per layer: which stream wins each prediction")


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
        default_factory=Interventions,
        description='e.g. zero FF keys: [{"kind": "scale", "hook": "layers.3.ff.keys", "axis": "ff_key", '
        '"index": [12], "factor": 0}]',
    )
    top_keys: int = Field(5, ge=1, le=MAX_TOP)
    top_tokens: int = Field(5, ge=1, le=MAX_TOP)
    layer: int | None = Field(
        None, ge=0, le=MAX_INDEX, description="the one FF layer to read (its index), as the page shows; omitted: all"
    )
