"""What a page shows of a run, declared once: the page's form (`Annotated[ExploreFields, Form()]`) and its JSON
request (`ExploreRequest` inherits the fields) read the same model, with the same bounds and descriptions. A form
carries its other controls beside these, which the model ignores (pydantic's default); a JSON request forbids
them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from inference.core.bounds import MAX_INDEX, MAX_NAME_CHARS, MAX_SEED


class ExploreFields(BaseModel):
    """The Explore page's view of a run: one layer of one stack, one head, one call."""

    stack: str = Field("", max_length=MAX_NAME_CHARS, description="an attention stack of the model; empty: its first")
    layer: int = Field(0, ge=0, le=MAX_INDEX)
    head: int = Field(0, ge=0, le=MAX_INDEX, description="the head the page's heatmap shows (checked, not used here)")
    call: int = Field(0, ge=0, le=MAX_INDEX, description="which call (segment) of a layer that runs more than once")
    new_tokens: int | None = Field(
        None,
        ge=1,
        le=MAX_INDEX,
        description="how many tokens a language model continues the text by (default 24; at most the server's "
        "MEMLENS_MAX_NEW_TOKENS, 128 unless set); not for a translator",
    )


class SegmentsFields(BaseModel):
    """The Segments page's view of a run: one segment's attention, one layer and head."""

    segment: int = Field(0, ge=0, le=MAX_INDEX, description="the segment whose attention is on view")
    layer: int = Field(0, ge=0, le=MAX_INDEX)
    head: int = Field(0, ge=0, le=MAX_INDEX, description="checked against the model's heads")


class MemoryFields(BaseModel):
    """The Working memory page's run: its sampling seed, and the decoder layer whose attention is on view."""

    seed: int = Field(0, ge=0, le=MAX_SEED, description="seed of the working memory's nucleus sampling")
    layer: int = Field(0, ge=0, le=MAX_INDEX, description="decoder layer whose target-to-memory attention is returned")
