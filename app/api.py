"""JSON API: every view's data, without a browser. OpenAPI at /docs."""

from __future__ import annotations

import base64
from dataclasses import asdict
from typing import Annotated

import numpy as np
from fastapi import APIRouter, File, Form, HTTPException, Path, Request, UploadFile

from app.deps import JobsDep, RunnerDep
from app.figures import quantize_percent
from app.schemas import (
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
    JobResponse,
    MemoryRequest,
    MemoryResponse,
    ModelsResponse,
    SweepRequest,
    TranslationResponse,
    errors,
)
from app.store import Job
from app.uploads import read_upload
from app.validation import InputError, JobId, ModelName, shown
from inference.analyses.attention import attention_stacks, layer_attention, pattern_hook_name
from inference.analyses.blocks import attention_blocks
from inference.interventions import Interventions

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


def binary_array(array: np.ndarray) -> dict:
    """Plotly's binary array encoding: base64 of the raw little-endian bytes."""
    return {
        "dtype": "u1",
        "shape": list(array.shape),
        "bdata": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode(),
    }


@router.get("/models", response_model=ModelsResponse)
def models(runner: RunnerDep) -> dict:
    registry = runner.registry
    available = []
    for name in registry.available():
        entry = registry.entries[name]
        available.append(
            {
                "name": name,
                "config": asdict(entry.config),
                "meta": entry.meta,
                "bleu": entry.metrics.get("bleu"),
                "chrf": entry.metrics.get("chrf"),
                "lesion": entry.metrics.get("lesion"),
                "word_perplexity": entry.metrics.get("word_perplexity"),
            }
        )
    return {"models": available, "broken": [{"name": n, "reason": r} for n, r in registry.broken().items()]}


@router.post("/translate", response_model=TranslationResponse, responses=MODEL_ERRORS)
def translate(request: DecodedTextRequest, runner: RunnerDep) -> dict:
    return asdict(runner.translate(request.model, request.text, request.interventions, request.decoding))


@router.post("/attention", response_model=AttentionResponse, responses=MODEL_ERRORS)
def attention(request: AttentionRequest, runner: RunnerDep) -> dict:
    """One layer of one stack: weights [heads, q, k] as uint8 percent."""
    stacks = attention_stacks(runner.translator(request.model).model)
    if request.stack not in stacks:
        raise InputError(f"unknown stack {shown(request.stack)}; this model has {', '.join(stacks)}")
    if request.layer >= stacks[request.stack]:
        raise InputError(
            f"layer {request.layer} is out of range for {request.stack} (0 to {stacks[request.stack] - 1})"
        )
    trace = runner.trace(
        request.model,
        request.text,
        request.interventions,
        names=[pattern_hook_name(request.stack, request.layer)],
        decoding=request.decoding,
    )
    view = layer_attention(trace, request.stack, request.layer)
    return {
        "stack": view.stack,
        "layer": view.layer,
        "translation": trace.translations[0],
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
    for model in dict.fromkeys(request.models):
        trace = runner.trace(model, request.text, Interventions(), names=["*.pattern"], decoding=request.decoding)
        rows.append(
            {
                "model": model,
                "translation": trace.translations[0],
                "blocks": [asdict(b) for b in attention_blocks(trace)],
            }
        )
    return {"text": request.text, "models": rows}


@router.post("/uploads", response_model=JobResponse, responses=MODEL_ERRORS)
async def upload(
    request: Request, jobs: JobsDep, model: Annotated[ModelName, Form()], file: Annotated[UploadFile, File()]
) -> dict:
    """Translate a .txt or .tsv corpus in the background; poll /api/jobs/{id}."""
    settings = request.app.state.settings
    return job_json(
        jobs.submit_corpus(model, await read_upload(file, settings.max_upload_bytes, settings.max_upload_lines))
    )


@router.post("/sweeps", response_model=JobResponse, responses=MODEL_ERRORS)
def sweep(request: SweepRequest, jobs: JobsDep) -> dict:
    """BLEU against inference memory size on "demo" or an uploaded .tsv corpus (its job id); cached."""
    return job_json(jobs.submit_sweep(request.model, request.reference))


@router.get("/jobs/{job_id}", response_model=JobResponse, responses=errors(404))
def job(job_id: Annotated[JobId, Path()], jobs: JobsDep) -> dict:
    found = jobs.store.get(job_id)
    if found is None:
        raise HTTPException(404, f"no job {job_id}")
    return job_json(found)


def job_json(job: Job) -> dict:
    params = {k: v for k, v in job.params.items() if k not in ("sources", "references")}
    return {
        "id": job.id,
        "kind": job.kind,
        "status": job.status,
        "done": job.done,
        "total": job.total,
        "progress": job.progress,
        "params": params,
        "result": job.result,
        "error": job.error,
        "url": f"/results/{job.id}",
    }


@router.post("/blocks", response_model=BlocksResponse, responses=MODEL_ERRORS)
def blocks(request: DecodedTextRequest, runner: RunnerDep) -> dict:
    return {
        "blocks": [
            asdict(b) for b in runner.blocks(request.model, request.text, request.interventions, request.decoding)
        ]
    }


@router.post("/memory", response_model=MemoryResponse, responses=MODEL_ERRORS)
def memory(request: MemoryRequest, runner: RunnerDep) -> dict:
    """A working-memory model's stream (memory and translation), every step's
    decision, and target-to-memory attention of one decoder layer
    (weights [heads, target queries, memory keys] as uint8 percent)."""
    view = runner.memory_view(request.model, request.text, request.interventions, request.seed, request.layer)
    trace = view.trace
    return {
        "translation": trace.translations[0],
        "seed": request.seed,
        "memory_size": trace.config["run_memory_size"],
        "interventions": trace.config["interventions"],
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
