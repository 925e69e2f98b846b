"""The Explore page (one model: attention of every call, lesions, attribution where it applies) and the Compare page
(several models on one sentence), with the htmx fragments they swap in. Their runs are app/services/explore.py's and
app/services/translation.py's, shared with the JSON API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request

from app.figures.attention import (
    attention_heatmap,
    attribution_chart,
    block_summary,
    call_grid,
    compare_blocks,
    head_grid,
)
from app.figures.memory_operations import memory_operations_grid
from app.routers.deps import GatewayDep, ModelFor
from app.routers.forms import DecodingDep, LesionsDep, PresetLesionsDep, parse_heads
from app.routers.rendering import figure_json, render
from app.schemas.api import AttributionRequest, ExploreRequest
from app.schemas.validation import FieldText, ModelName
from app.schemas.views import ExploreFields
from app.services.demo import demo_sentences
from app.services.examples import demo_inputs, example_input
from app.services.explore import attribution, explore_controls, run_explore
from app.services.gating import PageModel, offered, opening_models, page_model
from app.services.pages import ATTRIBUTION, COMPARE, EXPLORE
from app.services.translation import compare_one, compared_models
from inference.core.axes import AxisRole
from inference.core.bounds import MAX_COMPARED_MODELS, MAX_INDEX
from inference.core.capabilities import Capability
from inference.core.trace import Role, Trace

router = APIRouter(include_in_schema=False)
ExploreModel = Annotated[PageModel, Depends(ModelFor(EXPLORE))]


@router.get("/explore")
def explore(
    request: Request,
    gateway: GatewayDep,
    model: ExploreModel,
    preset: PresetLesionsDep,
    text: Annotated[FieldText, Query()] = "",
):
    """model, text and lesions in the address open a view (`lesion=memory_size&memory_size.size=0`, as the form
    sends them); without a text the model's example runs."""
    model.lesion(gateway, preset)  # a lesion the model does not take, or out of its bounds, is refused here
    return render(
        request,
        "pages/explore.html",
        models=model.offered,
        model=model.name,
        text=text or model.example,
        example=model.example,
        demos=demo_inputs(model.record, model.capabilities),
        config=model.loaded.config,
        capabilities=model.capabilities,
        controls=explore_controls(model),
        lesion_forms=model.lesion_forms(preset),
        continuation_tokens=gateway.limits.continuation(None),
        max_new_tokens=gateway.limits.max_new_tokens,
    )


@router.post("/explore/run")
def explore_run(
    request: Request,
    gateway: GatewayDep,
    model: ExploreModel,
    lesions: LesionsDep,
    decoding: DecodingDep,
    view: Annotated[ExploreFields, Form()],
    text: Annotated[FieldText, Form()] = "",
    ablate: Annotated[FieldText, Form()] = "",
    autoscale: Annotated[bool, Form()] = False,
):
    """Run with and without the lesion; the attention views follow the lesioned run (the fields of the view:
    app/schemas/views.py, as /api/explore reads them). `ablate` writes head ablations as scales of the heads'
    outputs."""
    interventions = model.lesion(gateway, lesions, *parse_heads(ablate))
    asked = ExploreRequest(model=model.name, text=text, interventions=interventions, decoding=decoding, **dict(view))
    run = run_explore(gateway, model, asked)
    layer, head = view.layer, view.head
    figures = {
        "heatmap": figure_json(attention_heatmap(run.view, head, autoscale)),
        "grid": figure_json(head_grid(run.view, autoscale=autoscale)),
        "blocks": figure_json(block_summary(run.blocks, run.stack)),
    }
    if len(run.calls) > 1:
        figures["calls"] = figure_json(call_grid(run.calls, head, autoscale=autoscale))
    if any(h.memory_queries for h in run.operations):  # a stack where memory is written (or read)
        figures["operations"] = figure_json(memory_operations_grid(run.operations, run.stack))
    translates = model.can(Capability.TRANSLATES)
    shown_run = run.runs.shown
    return render(
        request,
        "partials/explore_results.html",
        plain=run.runs.plain,
        lesioned=run.runs.lesioned,
        translates=translates,
        continues=model.can(Capability.GENERATES_TEXT),
        continued=generated_tokens(run.runs.plain),
        max_new_tokens=gateway.limits.max_new_tokens,
        attributes=model.can(Capability.ATTRIBUTION),
        diff=run.diff,
        note=run.note,
        figures=figures,
        stack=run.stack,
        layer=layer,
        head=head,
        output_tokens=shown_run.tokens[shown_run.axis_with(AxisRole.TARGET)][0][1:] + ["<eos>"] if translates else [],
        decoding=decoding,
    )


def generated_tokens(trace: Trace) -> int:
    """How many tokens a language model's run generated (the GENERATED positions of its first example)."""
    return sum(role == Role.GENERATED for roles in trace.roles.values() for role in roles[0])


@router.post("/explore/attribution")
def explore_attribution(
    request: Request,
    gateway: GatewayDep,
    model: Annotated[PageModel, Depends(ModelFor(ATTRIBUTION))],
    lesions: LesionsDep,
    decoding: DecodingDep,
    position: Annotated[int, Form(ge=0, le=MAX_INDEX)],
    text: Annotated[FieldText, Form()] = "",
    ablate: Annotated[FieldText, Form()] = "",
):
    interventions = model.lesion(gateway, lesions, *parse_heads(ablate))
    asked = AttributionRequest(
        model=model.name, text=text, interventions=interventions, decoding=decoding, position=position
    )
    found = attribution(gateway, model, asked)
    return render(request, "partials/figures.html", figures={"attribution": figure_json(attribution_chart(found))})


@router.get("/compare")
def compare_page(request: Request, gateway: GatewayDep, text: Annotated[FieldText, Query()] = ""):
    available = offered(gateway, COMPARE)
    chosen = opening_models(available, COMPARE)
    if not text:  # the first model's measured example, as a page of one model opens on it
        text = example_input(gateway.registry.entries[chosen[0]]) if chosen else demo_sentences()[0].source
    return render(request, "pages/compare.html", models=available, chosen=chosen, text=text)


@dataclass(frozen=True)
class ComparedForm:
    models: list[PageModel]  # each once, in the order asked, at least two, the text checked against each
    text: str


def compared_form(
    gateway: GatewayDep,
    models: Annotated[list[ModelName], Form(max_length=MAX_COMPARED_MODELS)] = [],  # noqa: B006 (a copy each)
    text: Annotated[FieldText, Form()] = "",
) -> ComparedForm:
    """The models and text of a comparison, refused before any runs where they do not fit."""
    return ComparedForm(compared_models(gateway, [page_model(gateway, COMPARE, name) for name in models], text), text)


ComparedDep = Annotated[ComparedForm, Depends(compared_form)]


@router.post("/compare/run")
def compare_run(request: Request, decoding: DecodingDep, compared: ComparedDep):
    """The comparison's table; each row then asks for its model's run (/compare/row) and the figure for all of them
    (/compare/figure), so a row shows as soon as its model finishes."""
    names = [model.name for model in compared.models]
    return render(request, "partials/compare_table.html", models=names, text=compared.text, decoding=decoding)


@router.post("/compare/row")
def compare_row(
    request: Request,
    gateway: GatewayDep,
    decoding: DecodingDep,
    model: Annotated[PageModel, Depends(ModelFor(COMPARE))],
    text: Annotated[FieldText, Form()] = "",
):
    """One model's row of a comparison: its translation."""
    row = compare_one(gateway, model, text, decoding)
    return render(request, "partials/compare_row.html", model=row.model, translation=row.trace.outputs[0])


@router.post("/compare/figure")
def compare_figure(request: Request, gateway: GatewayDep, decoding: DecodingDep, compared: ComparedDep):
    """The block mass of every compared model, side by side (their runs are the rows' own, kept recently)."""
    rows = [compare_one(gateway, model, compared.text, decoding) for model in compared.models]
    figure = compare_blocks({row.model: row.blocks for row in rows})
    return render(request, "partials/figures.html", figures={"compare": figure_json(figure)})
