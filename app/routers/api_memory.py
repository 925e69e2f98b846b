"""JSON API of the working-memory models (paper 004): one sentence's memory, decisions and attention."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter

from app.figures.attention import quantize_percent
from app.routers.deps import RunnerDep
from app.schemas.api import COMMON_ERRORS, MODEL_ERRORS, MemoryRequest, MemoryResponse
from app.schemas.arrays import binary_array

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


@router.post("/memory", response_model=MemoryResponse, responses=MODEL_ERRORS)
def memory(request: MemoryRequest, runner: RunnerDep) -> dict:
    """A working-memory model's stream (memory and translation), every step's
    decision, and target-to-memory attention of one decoder layer
    (weights [heads, target queries, memory keys] as uint8 percent)."""
    view = runner.memory_view(request.model, request.text, request.interventions, request.seed, request.layer)
    trace = view.trace
    return {
        "translation": trace.outputs[0],
        "seed": request.seed,
        "memory_size": trace.run.memory_size,
        "interventions": trace.run.interventions,
        "stream": [asdict(t) for t in view.stream],
        "memory": [t.token for t in view.stream if t.kind == "memory"],
        "steps": [asdict(s) for s in view.steps],
        "attention": {
            "layer": view.attention.layer,
            "query_tokens": view.attention.query_tokens,
            "key_tokens": view.attention.key_tokens,
            "weights": {**binary_array(quantize_percent(view.attention.weights)), "unit": "percent"},
        },
    }
