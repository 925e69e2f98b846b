"""Request and response bodies of the JSON API; interventions are the
inference core's own model. Every error of every route has one shape,
`ErrorResponse`, and every status code a route can return is documented."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.arrays import BinaryWeights, percent_weights
from app.schemas.validation import URL_TOO_LONG, CallIndex, FieldText, IntegrationSteps, ModelName, Reference
from app.schemas.views import ExploreFields, MemoryFields, SegmentsFields
from inference.analyses.attention import LayerAttention
from inference.analyses.blocks import HeadBlocks
from inference.analyses.memory_operations import HeadOperations
from inference.analyses.working_memory import StepDecision, StreamToken
from inference.core.axes import AxisRole
from inference.core.bounds import MAX_COMPARED_MODELS, MAX_INDEX, MAX_NAME_CHARS
from inference.core.capabilities import Capability
from inference.core.decoding import Decoding
from inference.core.interventions import Interventions
from inference.core.model_results import LesionCurve, Scores
from inference.core.trace import Role

DEMO_TEXT = "Ein Hund läuft über die Wiese."


class ErrorResponse(BaseModel):
    detail: str = Field(description="what was wrong with the request, in words")


def errors(*statuses: int) -> dict[int | str, dict]:
    """OpenAPI `responses` for these error statuses, all of them ErrorResponse, each with its own example."""
    return {
        status: {
            "model": ErrorResponse,
            "description": ERROR_MEANINGS[status],
            "content": {"application/json": {"example": {"detail": ERROR_EXAMPLES[status]}}},
        }
        for status in statuses
    }


ERROR_MEANINGS = {
    400: "input the model cannot take (text, layer, head, lesion, …)",
    403: "a state-changing request from another site",
    404: "unknown model, job or FF study",
    409: "the checkpoint is broken: see GET /api/models",
    413: "the request body is too large",
    414: "the URL (path and query string) is too long",
    422: "a field is missing, malformed or out of bounds",
}
# What the server really answers in each case, word for word as the code that raises it writes it (with default
# settings); tests/app/test_openapi.py checks each against a real answer.
ERROR_EXAMPLES = {
    400: "the text has 2499 characters; the limit is 2000",  # ModelGateway.check_text
    403: "cross-origin request refused: the browser marked it as cross-site; "  # SecurityMiddleware
    "POST requests are accepted from this server's own pages only",
    404: "unknown model 'nope'; translation models: memtransformer_10, transformer, …",  # gating.page_model
    409: "checkpoint 'memtransformer_20' is unavailable: model.safetensors is missing",  # gating.page_model
    413: "the request body is over 2,000,000 bytes",  # body_limit.too_large_message
    414: URL_TOO_LONG,  # app/server.py, before the request reaches the app
    422: f"text: Field required; layer: Input should be less than or equal to {MAX_INDEX}",  # validation_message
}
# Every API route: a request can be malformed, too large, too long a URL, or cross-site.
COMMON_ERRORS = errors(403, 413, 414, 422)
MODEL_ERRORS = errors(400, 404, 409)  # routes that run a model on client input


class TextRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"model": "memtransformer_10", "text": DEMO_TEXT},
                {
                    "model": "memtransformer_10",
                    "text": DEMO_TEXT,
                    "interventions": [
                        {"kind": "memory_size", "size": 5},
                        {"kind": "knockout_slots", "slots": [0, 3]},
                        {"kind": "scale", "hook": "decoder.layers.1.cross_attn.z", "axis": "head", "index": [2]},
                    ],
                },
            ]
        },
    )
    model: ModelName
    text: FieldText = Field(
        description="source sentence, in the model's source language (German or Russian)", examples=[DEMO_TEXT]
    )
    interventions: Interventions = Field(
        default_factory=Interventions,
        description="lesions, each tagged by its kind: the kinds every family shares and those a family registers "
        "of its own, each described below; a kind the model's family does not apply is refused with a 400",
    )


class DecodedTextRequest(TextRequest):
    """A text the model translates itself, greedily or by beam search (the Memory Transformer families)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"model": "memtransformer_10", "text": DEMO_TEXT},
                {
                    "model": "memtransformer_10",
                    "text": DEMO_TEXT,
                    "decoding": {"method": "beam", "beam_size": 4, "length_penalty": 0.6},
                },
            ]
        }
    )
    decoding: Decoding = Field(
        default_factory=Decoding,
        description="greedy (default) or beam search; a working-memory model decodes greedily only",
    )


class AttentionRequest(DecodedTextRequest):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"model": "memtransformer_10", "text": DEMO_TEXT, "stack": "decoder.cross_attn", "layer": 1}]
        }
    )
    stack: str = Field(
        max_length=MAX_NAME_CHARS,
        description="e.g. encoder.attn, encoder.mem.attn, decoder.self_attn, decoder.cross_attn",
    )
    layer: int = Field(ge=0, le=MAX_INDEX)
    at: CallIndex = Field(
        default_factory=dict,
        description='which call, where the layer runs more than once: e.g. {"segment": 2}; none: the only call',
    )


class ExploreRequest(ExploreFields, DecodedTextRequest):
    """What the Explore page asks: a run plainly and under the interventions, one layer of one stack on view."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "model": "memtransformer_10",
                    "text": DEMO_TEXT,
                    "interventions": [{"kind": "memory_size", "size": 5}],
                    "stack": "decoder.cross_attn",
                    "layer": 1,
                    "head": 1,
                }
            ]
        },
    )


class SegmentsRequest(SegmentsFields, TextRequest):
    """What the Segments page asks: a run plainly and under the memory interventions by segment."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "model": "rmt_copy",
                    "text": "212635207023360566341532<bos>212635207023360566341532212635207023360566341532",
                    "interventions": [{"kind": "reset_memory", "segment": 1}],
                    "segment": 1,
                }
            ]
        },
    )


class SweepRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"model": "memtransformer_10", "reference": "demo"}]}
    )
    model: ModelName
    reference: Reference = "demo"


class AttributionRequest(DecodedTextRequest):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"model": "memtransformer_10", "text": DEMO_TEXT, "position": 0}]}
    )
    position: int = Field(
        ge=0, le=MAX_INDEX, description="index of the output token in the model's translation (the final EOS included)"
    )


class CompareRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"models": ["transformer", "memtransformer_10"], "text": DEMO_TEXT}]},
    )
    models: list[ModelName] = Field(min_length=1, max_length=MAX_COMPARED_MODELS)
    text: FieldText
    decoding: Decoding = Field(default_factory=Decoding)


class MemoryRequest(MemoryFields, TextRequest):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"model": "working_memory_de_en", "text": DEMO_TEXT, "seed": 0, "layer": 0}]},
    )


class StateRequest(TextRequest):
    """An input to a recurrent-step model (the Neural GPUs), run step by step."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"model": "neural_gpu_addition", "text": "11111110+10000000"},
                {
                    "model": "neural_gpu_addition",
                    "text": "11111110+10000000",
                    "interventions": [{"kind": "edit_state", "mode": "zero", "from_step": 10, "start": 3, "stop": 6}],
                },
            ]
        }
    )
    text: FieldText = Field(
        description="the model's input: a task sample (binary addition: a+b, least significant bit first) "
        "or a source sentence",
        examples=["11111110+10000000"],
    )


class FocusRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"model": "extended_neural_gpu_de_en", "text": DEMO_TEXT, "steps": 16}]},
    )
    model: ModelName
    text: FieldText = Field(description="source sentence, at most 24 tokens", examples=[DEMO_TEXT])
    steps: IntegrationSteps = Field(16, description="integration steps of integrated gradients")


# ---------------------------------------------------------------- responses


class ModelInfo(BaseModel):
    name: str
    config: dict[str, Any]
    capabilities: list[Capability] = Field(description="what the model can do; pages and views follow from these")
    meta: dict[str, Any]
    bleu: Scores | None
    chrf: Scores | None
    lesion: LesionCurve | None
    word_perplexity: Scores | None
    carried_state: dict[str, Any] | None = Field(
        description="a segment language model's perplexity as trained and with what it carries between segments "
        "removed, measured offline, with the difference's bootstrap interval and its verdict; null: not measured"
    )


class BrokenModel(BaseModel):
    name: str
    reason: str


class ModelsResponse(BaseModel):
    models: list[ModelInfo]
    broken: list[BrokenModel]


class TranslationResponse(BaseModel):
    model: str
    source: str
    translation: str
    tokens: dict[str, list[str]]
    roles: dict[str, list[Role]] = Field(description="token axis -> the role of each of its positions")
    memory_size: int
    interventions: Interventions
    decoding: Decoding | None = Field(
        description="how the output was chosen; null for a working-memory model, which samples its memory"
    )


class AttentionWeights(BaseModel):
    """One call of one layer: the tokens and roles of both axes, the weights [heads, q, k] as uint8 percent."""

    stack: str
    layer: int
    query_tokens: list[str]
    key_tokens: list[str]
    query_roles: list[Role]
    key_roles: list[Role]
    query_axis_role: AxisRole | None = Field(description="what the query positions are, as the model's family says")
    key_axis_role: AxisRole | None = Field(description="what the key positions are")
    weights: BinaryWeights

    @classmethod
    def of(cls, view: LayerAttention, **fields: Any) -> Self:
        """The call `view` shows, with the fields of the answer it is part of."""
        return cls(
            stack=view.stack,
            layer=view.layer,
            query_tokens=view.query_tokens,
            key_tokens=view.key_tokens,
            query_roles=view.query_roles,
            key_roles=view.key_roles,
            query_axis_role=view.query_axis_role,
            key_axis_role=view.key_axis_role,
            weights=percent_weights(view.weights),
            **fields,
        )


class AttentionResponse(AttentionWeights):
    at: dict[str, int]
    calls: list[dict[str, int]] = Field(description="the index of every call of this layer in the run")
    translation: str


class AttributionResponse(BaseModel):
    position: int
    token: str
    source_tokens: list[str]
    memory_slots: list[str]
    integrated_gradients_source: list[float]
    integrated_gradients_memory: list[float]
    saliency_source: list[float]
    saliency_memory: list[float]
    convergence_delta: float
    translation_tokens: list[str]


class LayerAttentionResponse(AttentionWeights):
    index: dict[str, int] = Field(description='the call on view, e.g. {"segment": 2}; {} for the only call')


class LesionedResponse(BaseModel):
    """What every lesioned view answers first: the output with and without the interventions, the
    interventions (as normalised) and, in words, what they changed."""

    output: str = Field(description="the output of the run with the interventions")
    plain_output: str = Field(description="the output without them")
    interventions: Interventions
    note: str = Field(description="the interventions in words and what they changed")


class ExploreResponse(LesionedResponse):
    calls: int = Field(description="calls of the layer on view in the run (segments)")
    attention: LayerAttentionResponse = Field(description="the call on view, of the run with the interventions")
    blocks: list[HeadBlocks] = Field(description="block mass of every head, of the run with the interventions")
    operations: list[HeadOperations] = Field(description="what each head of the stack does with memory")


class SegmentsResponse(LesionedResponse):
    starts: list[int] = Field(description="first input position of every segment")
    lengths: list[int] = Field(description="tokens of every segment")
    plain_hits: list[bool | None] | None = Field(
        description="per input position: next token predicted (null: unscored)"
    )
    lesioned_hits: list[bool | None] | None
    attention: LayerAttentionResponse
    operations: list[HeadOperations]


class BlocksResponse(BaseModel):
    blocks: list[HeadBlocks]


class CompareRow(BaseModel):
    model: str
    translation: str
    blocks: list[HeadBlocks]


class CompareResponse(BaseModel):
    text: str
    models: list[CompareRow]


class JobResponse(BaseModel):
    id: str
    kind: str
    status: str = Field(description="queued, running, done or failed")
    done: int
    total: int
    progress: float
    params: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None
    seconds: float | None = Field(description="its run, from its worker's claim to its end; null until it has ended")
    url: str


class MemoryAttentionResponse(BaseModel):
    layer: int
    query_tokens: list[str]
    key_tokens: list[str]
    weights: BinaryWeights


class MemoryResponse(BaseModel):
    translation: str = Field(description="the translation of the run with the interventions")
    plain_translation: str = Field(description="the translation without them")
    outcome: str | None = Field(description="what the interventions did, in words; null without interventions")
    seed: int
    memory_size: int
    interventions: Interventions
    stream: list[StreamToken] = Field(description="every element after BOS, memory or target, in order")
    memory: list[str]
    steps: list[StepDecision] = Field(description="every decision, as the decoder wrote it")
    attention: MemoryAttentionResponse


class StateResponse(LesionedResponse):
    note: str = Field(description="the interventions in words and what they changed; empty without interventions")
    positions: list[str] = Field(description="the state's length axis: the input tokens, then padding")
    steps: list[int] = Field(description="the global index of every step, encoder steps then decoder steps")
    stacks: list[str] = Field(description="the stack of each step: encoder or decoder")
    map_groups: list[tuple[int, int]] = Field(description="(first map, last map + 1) of each group")
    state: list[list[list[list[float]]]] = Field(
        description="[steps, groups, width, length]: each map group's mean of the state after the step"
    )
    update: list[list[float]] = Field(description="[steps, length]: update gate, mean over layers, maps and width")
    reset: list[list[float]] = Field(description="[steps, length]: reset gate, the same mean")
    change: list[list[float]] = Field(description="[steps, length]: L2 norm of the state's change at each step")
    tape: list[list[float]] | None = Field(description="[decoder steps, length]: L2 norm of the output tape")


class FocusResponse(BaseModel):
    output: str
    output_tokens: list[str] = Field(description="the greedy output's tokens, EOS included unless it was cut")
    source_tokens: list[str]
    integrated_gradients: list[list[float]] = Field(description="[outputs, sources]: signed, summed over dimensions")
    convergence_delta: float = Field(description="largest completeness error of a row")
    attribution_share: list[list[float]] = Field(description="[outputs, sources]: |IG| share of each source token")
    attention: list[list[float]] | None = Field(description="[outputs, sources]: mean over heads; null: no attention")
    attention_stack: str | None
    peak_attribution: float
    peak_attention: float | None
    agreement: float | None = Field(description="share of outputs whose top source token is the same in both")


class Health(BaseModel):
    status: Literal["ok", "starting"] = Field(description='"starting" while the checkpoint folders are scanned')
    models: int | None = Field(description="usable models; null while starting")
    broken: int | None = Field(description="models listed with the reason they cannot load; null while starting")
    device: str
    warm_up: Literal["off", "running", "done"] = Field(
        description='the background warm-up of the pages that run a model (MEMLENS_WARM_UP): "done" once a first '
        "request on any page costs about what a later one does"
    )
