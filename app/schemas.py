"""Request bodies of the JSON API; interventions are the inference core's own model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from inference.interventions import Interventions


class TextRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = Field(description="checkpoint name, as listed by GET /api/models")
    text: str = Field(description="source sentence, in the model's source language (German or Russian)")
    interventions: Interventions = Field(default_factory=Interventions)


class AttentionRequest(TextRequest):
    stack: str = Field(description="e.g. encoder.attn, encoder.mem.attn, decoder.self_attn, decoder.cross_attn")
    layer: int = Field(ge=0)


class SweepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str
    reference: str = Field("demo", description='"demo", "multi30k_test_2016" (read from the data directory) or the job id of an uploaded .tsv corpus')


class AttributionRequest(TextRequest):
    position: int = Field(ge=0, description="index of the output token in the model's translation (the final EOS included)")


class CompareRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: list[str] = Field(min_length=1, max_length=6)
    text: str


class MemoryRequest(TextRequest):
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seed of the working memory's nucleus sampling")
    layer: int = Field(0, ge=0, description="decoder layer whose target-to-memory attention is returned")
