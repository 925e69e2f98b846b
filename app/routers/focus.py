"""The Focus page: for one sentence, where each of two models looks in its
source, by integrated gradients of every output token onto the source tokens
and, for a model that attends to its source, by its attention, side by side
(paper 001: the Extended Neural GPU, which has no attention, beside the GRU
with attention)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request

from app.figures.focus import focus_map
from app.routers.deps import GatewayDep, ModelFor
from app.routers.rendering import figure_json, render
from app.schemas.validation import INTEGRATION_STEPS, FieldText, IntegrationSteps, ModelName
from app.services.focus import focus_side_by_side, partner
from app.services.gating import PageModel, page_model
from app.services.pages import FOCUS

router = APIRouter(include_in_schema=False)
DEFAULT_STEPS = 16


FocusModel = Annotated[PageModel, Depends(ModelFor(FOCUS))]


@router.get("/focus")
def focus_page(
    request: Request,
    gateway: GatewayDep,
    model: FocusModel,
    other: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
):
    if other is not None:
        page_model(gateway, FOCUS, other)  # refused like the first
    return render(
        request,
        "pages/focus.html",
        models=model.offered,
        model=model.name,
        other=other or partner(gateway, model),
        text=text or model.example,
        steps=INTEGRATION_STEPS,
        default_steps=DEFAULT_STEPS,
    )


@router.post("/focus/run")
def focus_run(
    request: Request,
    gateway: GatewayDep,
    model: FocusModel,
    text: Annotated[FieldText, Form()] = "",
    other: Annotated[ModelName | None, Form()] = None,
    steps: Annotated[IntegrationSteps, Form()] = DEFAULT_STEPS,
):
    models = [model] if not other or other == model.name else [model, page_model(gateway, FOCUS, other)]
    shown = focus_side_by_side(gateway, models, text, steps)
    columns = []  # one column of figures per model, side by side
    for i, found in enumerate(shown):
        view = found.focus
        figures = {}
        figures[f"attribution-{i}"] = focus_map(
            view.attribution_share, view.output_tokens, view.source_tokens,
            f"{found.model}: share of |integrated gradients| per output token",
        )  # fmt: skip
        if view.attention is not None:
            figures[f"attention-{i}"] = focus_map(
                view.attention, view.output_tokens, view.source_tokens,
                f"{found.model}: attention ({found.attention_stack}, mean over heads)",
            )  # fmt: skip
        columns.append({name: figure_json(figure) for name, figure in figures.items()})
    return render(request, "partials/focus_results.html", shown=shown, steps=steps, columns=columns)
