"""JSON API of the working-memory models (paper 004): one sentence's memory, decisions and attention, as the
Working memory page shows them (app/services/memory.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from app.routers.deps import GatewayDep, ModelFor
from app.schemas.api import COMMON_ERRORS, MODEL_ERRORS, MemoryAttentionResponse, MemoryRequest, MemoryResponse
from app.schemas.arrays import percent_weights
from app.services.gating import PageModel
from app.services.memory import run_memory
from app.services.pages import MEMORY

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


@router.post("/memory", response_model=MemoryResponse, responses=MODEL_ERRORS)
def memory(
    request: MemoryRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(MEMORY))]
) -> MemoryResponse:
    """A working-memory model's stream (memory and translation), every step's
    decision, and target-to-memory attention of one decoder layer
    (weights [heads, target queries, memory keys] as uint8 percent), under the interventions; with
    interventions also the plain translation and what they changed, in words."""
    run = run_memory(gateway, model, request.text, request.interventions, request.seed, request.layer)
    view = run.shown
    trace = view.trace
    return MemoryResponse(
        translation=trace.outputs[0],
        plain_translation=run.plain.trace.outputs[0],
        outcome=run.outcome,
        seed=request.seed,
        memory_size=trace.run.memory_size,
        interventions=trace.run.interventions,
        stream=view.stream,
        memory=[t.token for t in view.stream if t.kind == "memory"],
        steps=view.steps,
        attention=MemoryAttentionResponse(
            layer=view.attention.layer,
            query_tokens=view.attention.query_tokens,
            key_tokens=view.attention.key_tokens,
            weights=percent_weights(view.attention.weights),
        ),
    )
