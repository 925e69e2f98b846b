"""The Focus page: for one sentence, where each of two models looks in its
source, by integrated gradients of every output token onto the source tokens
and, for a model that attends to its source, by its attention, side by side
(paper 001: the Extended Neural GPU, which has no attention, beside the GRU
with attention)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request

from app.figures.focus import focus_map
from app.routers.deps import RunnerDep
from app.routers.rendering import figure_json, render
from app.schemas.validation import INTEGRATION_STEPS, FieldText, IntegrationSteps, ModelName
from app.services.examples import example_input
from app.services.focus import model_focus
from app.services.pages import FOCUS
from app.services.runner import Runner
from inference.analyses.focus import source_attention_stack

router = APIRouter(include_in_schema=False)
DEFAULT_STEPS = 16


def attends(runner: Runner, model: str) -> bool:
    return source_attention_stack(runner.model(model).model) is not None


def partner(runner: Runner, model: str, available: list[str]) -> str:
    """The model shown beside `model` at first: one trained on the same task (translation: none named) that
    focuses the other way (attends where it does not), else the next such; "" where there is none."""
    entries = runner.registry.entries
    task = entries[model].meta.get("task")
    others = [name for name in available if name != model and entries[name].meta.get("task") == task]
    differs = [name for name in others if attends(runner, name) != attends(runner, model)]
    return (differs or others or [""])[0]


@router.get("/focus")
def focus_page(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName | None, Query()] = None,
    other: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
):
    available, model = runner.page_models(model, FOCUS)
    runner.model_for(model, FOCUS)
    return render(
        request,
        "pages/focus.html",
        models=available,
        model=model,
        other=other or partner(runner, model, available),
        text=text or example_input(runner.registry.entries[model]),
        steps=INTEGRATION_STEPS,
        default_steps=DEFAULT_STEPS,
    )


@router.post("/focus/run")
def focus_run(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName, Form()],
    text: Annotated[FieldText, Form()] = "",
    other: Annotated[ModelName | None, Form()] = None,
    steps: Annotated[IntegrationSteps, Form()] = DEFAULT_STEPS,
):
    models = [model] if not other or other == model else [model, other]
    for name in models:
        runner.attributable_text(name, text)  # either refused before either runs
    shown = [model_focus(runner, name, text, steps) for name in models]
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
