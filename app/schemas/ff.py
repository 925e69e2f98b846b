"""Request and response bodies of the FF memories' JSON API (/api/ff): key cards and the logit lens."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.figures.ff_views import KeyCard, KeyOrder
from app.schemas.validation import FieldText, JobId, ModelName
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


class LensResponse(BaseModel):
    output: str
    interventions: Interventions
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
        default_factory=Interventions,
        description='e.g. zero FF keys: [{"kind": "scale", "hook": "layers.3.ff.keys", "axis": "ff_key", '
        '"index": [12], "factor": 0}]',
    )
    top_keys: int = Field(5, ge=1, le=MAX_TOP)
    top_tokens: int = Field(5, ge=1, le=MAX_TOP)
    layer: int | None = Field(
        None, ge=0, le=MAX_INDEX, description="the one FF layer to read (its index), as the page shows; omitted: all"
    )
