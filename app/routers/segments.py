"""The Segments page, for any model that reads its input segment by segment
(paper 002's RMT, Transformer-XL and their no-memory baseline): where the
segments lie and which next tokens each gets right, one segment's attention
with its read, sequence, write and cache blocks outlined, the memory's path
across segments, and live memory lesions by segment (reset, slot knock-out,
noise, transplant of another input's memory) re-run on every change, beside
what removing the carried state costs a language model in perplexity where
that was measured offline. The run is app/services/segments.py's, shared
with /api/segments."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request

from app.figures.memory_operations import memory_operations_grid
from app.figures.segments import hits_strip, memory_path_figure, probe_figure, segment_attention
from app.routers.deps import GatewayDep, ModelFor
from app.routers.forms import LesionsDep
from app.routers.rendering import figure_json, render
from app.schemas.api import SegmentsRequest
from app.schemas.validation import FieldText
from app.schemas.views import SegmentsFields
from app.services.gating import PageModel
from app.services.pages import SEGMENTS
from app.services.segments import run_segments, segment_controls
from inference.analyses.carried_state import carried_state_measure

router = APIRouter(include_in_schema=False)
SegmentsModel = Annotated[PageModel, Depends(ModelFor(SEGMENTS))]


@router.get("/segments")
def segments_page(request: Request, model: SegmentsModel, text: Annotated[FieldText, Query()] = ""):
    controls = segment_controls(model)
    return render(
        request,
        "pages/segments.html",
        models=model.offered,
        model=model.name,
        text=text or model.example,
        config=model.loaded.config,
        carried=carried_state_measure(model.loaded.metrics),
        lesion_forms=model.lesion_forms(),
        **asdict(controls),
    )


@router.post("/segments/run")
def segments_run(
    request: Request,
    gateway: GatewayDep,
    model: SegmentsModel,
    lesions: LesionsDep,
    view: Annotated[SegmentsFields, Form()],
    text: Annotated[FieldText, Form()] = "",
    autoscale: Annotated[bool, Form()] = False,
):
    """Run plainly and, when a lesion is set, lesioned; the views follow the lesioned run."""
    interventions = model.lesion(gateway, lesions)
    asked = SegmentsRequest(model=model.name, text=text, interventions=interventions, **dict(view))
    run = run_segments(gateway, model, asked)
    segment, head = view.segment, view.head
    figures = {}
    if run.plain_hits is not None:
        figures["strip"] = figure_json(hits_strip(run.tokens, run.spans, run.plain_hits, run.lesioned_hits))
    probed = model.loaded.metrics.memory_probe  # measured offline (python -m training memory-probe): near the top
    if probed is not None:
        figures["probe"] = figure_json(probe_figure(probed, segment))
    figures["segment"] = figure_json(segment_attention(run.view, head, autoscale))
    if run.path is not None:
        figures["operations"] = figure_json(memory_operations_grid(run.operations, run.controls.stack))
        figures["path"] = figure_json(memory_path_figure(run.path, run.tokens, run.spans))  # the tallest, last
    return render(
        request,
        "partials/segments_results.html",
        plain=run.runs.plain,
        lesioned=run.runs.lesioned,
        plain_hits=run.plain_hits,
        lesioned_hits=run.lesioned_hits,
        note=run.note,
        spans=run.spans,
        figures=figures,
        config=model.loaded.config,
        **asdict(run.controls),
    )
