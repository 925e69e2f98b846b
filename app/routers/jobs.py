"""Pages for uploads, lesion sweeps and their results (permalinks)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, HTTPException, Path, Request, UploadFile
from fastapi.responses import RedirectResponse, Response

from app.figures.attention import block_summary, lesion_curve
from app.figures.memory import memory_summary_figures
from app.routers.deps import GatewayDep, JobsDep
from app.routers.rendering import figure_json, render
from app.schemas.validation import ModelName, Reference, shown
from app.services.gating import page_model
from app.services.pages import SWEEP, UPLOAD
from app.services.store import Job
from app.services.uploads import read_upload
from inference.analyses.blocks import HeadBlocks

router = APIRouter(include_in_schema=False)


def go_to(request: Request, url: str) -> Response:
    """htmx follows HX-Redirect; a plain form post follows a 303."""
    if request.headers.get("HX-Request"):
        return Response(status_code=204, headers={"HX-Redirect": url})
    return RedirectResponse(url, status_code=303)


@router.get("/upload")
def upload_page(request: Request, gateway: GatewayDep, jobs: JobsDep):
    chosen = page_model(gateway, UPLOAD, None)
    entries = gateway.registry.entries
    languages: dict[str, list[str]] = {}  # source language -> its models, as the page groups them
    for name in chosen.offered:
        languages.setdefault(entries[name].record.source_language or "not stated", []).append(name)
    return render(request, "pages/upload.html", languages=languages, chosen=chosen.name, recent=jobs.store.recent())


@router.post("/upload")
async def upload(
    request: Request,
    gateway: GatewayDep,
    jobs: JobsDep,
    model: Annotated[ModelName, Form()],
    file: Annotated[UploadFile, File()],
):
    chosen = page_model(gateway, UPLOAD, model)  # refused before the file is read
    settings = request.app.state.settings
    job = jobs.submit_corpus(chosen, await read_upload(file, settings.max_upload_bytes, settings.max_upload_lines))
    return go_to(request, f"/results/{job.id}")


@router.post("/sweep")
def sweep(
    request: Request,
    gateway: GatewayDep,
    jobs: JobsDep,
    model: Annotated[ModelName, Form()],
    reference: Annotated[Reference, Form()] = "demo",
):
    job = jobs.submit_sweep(page_model(gateway, SWEEP, model), reference)
    return go_to(request, f"/results/{job.id}")


def job_or_404(jobs, job_id: str) -> Job:
    job = jobs.store.get(job_id)
    if job is None:
        raise HTTPException(404, f"no result {shown(job_id)}")
    return job


def job_context(job: Job) -> dict:
    """What the result fragment shows: progress, or the finished views."""
    context: dict = {"job": job, "figures": {}}
    if job.status != "done" or job.result is None:
        return context
    if job.result.get("memory_decisions"):
        for name, figure in memory_summary_figures(job.result["summary"]).items():
            context["figures"][name] = figure_json(figure)
        references = job.params["references"] or [None] * len(job.params["sources"])
        context["memory_rows"] = list(
            zip(job.params["sources"], references, job.result["translations"], job.result["memory"])
        )
    elif job.kind == "sweep":
        result = job.result
        title = (
            f"{job.params['model']}: BLEU against memory size "
            f"({result['sentences']} sentences, {job.params['reference']} set)"
        )
        context["figures"]["sweep"] = figure_json(
            lesion_curve(result["memory_size"], result["bleu"], result["trained"], title)
        )
    elif job.kind == "corpus":
        blocks = [HeadBlocks(**b) for b in job.result["blocks"]]
        for stack in dict.fromkeys(b.stack for b in blocks):
            context["figures"][stack.replace(".", "-")] = figure_json(block_summary(blocks, stack))
        references = job.params["references"] or [None] * len(job.params["sources"])
        context["rows"] = list(zip(job.params["sources"], references, job.result["translations"]))
    return context


@router.get("/results/{job_id}")
def result_page(request: Request, jobs: JobsDep, job_id: Annotated[str, Path(max_length=64)]):
    return render(request, "pages/result.html", **job_context(job_or_404(jobs, job_id)))


@router.get("/results/{job_id}/fragment")
def result_fragment(request: Request, jobs: JobsDep, job_id: Annotated[str, Path(max_length=64)]):
    return render(request, "partials/job.html", **job_context(job_or_404(jobs, job_id)))
