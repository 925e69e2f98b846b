"""JSON API of the background jobs: corpus uploads and lesion sweeps, and their progress and results."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, HTTPException, Path, Request, UploadFile

from app.routers.deps import GatewayDep, JobsDep, ModelFor
from app.schemas.api import COMMON_ERRORS, MODEL_ERRORS, JobResponse, SweepRequest, errors
from app.schemas.validation import JobId, ModelName
from app.services.gating import PageModel, page_model
from app.services.pages import SWEEP, UPLOAD
from app.services.store import Job
from app.services.uploads import read_upload

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


@router.post("/uploads", response_model=JobResponse, responses=MODEL_ERRORS)
async def upload(
    request: Request,
    gateway: GatewayDep,
    jobs: JobsDep,
    model: Annotated[ModelName, Form()],
    file: Annotated[UploadFile, File()],
) -> JobResponse:
    """Translate a .txt or .tsv corpus in the background; poll /api/jobs/{id}."""
    chosen = page_model(gateway, UPLOAD, model)  # refused before the file is read
    settings = request.app.state.settings
    return job_response(
        jobs.submit_corpus(chosen, await read_upload(file, settings.max_upload_bytes, settings.max_upload_lines))
    )


@router.post("/sweeps", response_model=JobResponse, responses=MODEL_ERRORS)
def sweep(request: SweepRequest, jobs: JobsDep, model: Annotated[PageModel, Depends(ModelFor(SWEEP))]) -> JobResponse:
    """BLEU against inference memory size on "demo" or an uploaded .tsv corpus (its job id); cached."""
    return job_response(jobs.submit_sweep(model, request.reference))


@router.get("/jobs/{job_id}", response_model=JobResponse, responses=errors(404))
def job(job_id: Annotated[JobId, Path()], jobs: JobsDep) -> JobResponse:
    found = jobs.store.get(job_id)
    if found is None:
        raise HTTPException(404, f"no job {job_id}")
    return job_response(found)


def job_response(job: Job) -> JobResponse:
    """A job as the API answers it: its parameters without the corpus it was given."""
    return JobResponse(
        id=job.id,
        kind=job.kind,
        status=job.status,
        done=job.done,
        total=job.total,
        progress=job.progress,
        params={k: v for k, v in job.params.items() if k not in ("sources", "references")},
        result=job.result,
        error=job.error,
        seconds=job.seconds,
        url=f"/results/{job.id}",
    )
