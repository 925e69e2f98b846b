"""The State page, for any model that rewrites a state tensor step by step
(paper 001's Neural GPUs): the state at a chosen step per map group, a step
slider that plays the computation, the update and reset gates and the
state's change per position and step (where a carry travels), the output
tape of a model that writes one, and live lesions of the state (a region
zeroed or frozen from a step on, fewer encoder steps, a gate clamped) with
the changed output marked."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Form, Query, Request

from app.figures.state import state_figures, step_labels
from app.routers.deps import RunnerDep
from app.routers.rendering import figure_json, redirect_elsewhere, render
from app.schemas.validation import MAX_INDEX, FieldText, ModelName
from app.services.examples import example_input
from app.services.lesion_notes import lesion_note, word_change
from app.services.pages import STATE
from app.services.runner import Runner
from app.services.state import examples, rounded, run_state
from inference.core.family import family_of
from inference.core.interventions import ClampGate, EditState, EncoderSteps, Interventions

router = APIRouter(include_in_schema=False)


def state_controls(runner: Runner, model: str) -> dict:
    loaded = runner.model_for(model, STATE)
    task = loaded.meta.get("task")
    return {
        "config": loaded.config,
        "described": loaded.meta.get("description") or family_of(loaded.config.family).title,
        "task": task,
        "examples": examples(task, example_input(runner.registry.entries[model])),
    }


@router.get("/state")
def state_page(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
):
    moved = redirect_elsewhere(runner, STATE, model, text)  # its views are on another page
    if moved:
        return moved
    available, model = runner.page_models(model, STATE)
    controls = state_controls(runner, model)
    default = controls["examples"][0][1] if controls["examples"] else ""
    return render(request, "pages/state.html", models=available, model=model, text=text or default, **controls)


def state_lesion(
    edit: str,
    edit_from: int,
    edit_start: int,
    edit_stop: int | None,
    encoder_steps: int | None,
    clamp: str,
    clamp_value: float,
    clamp_from: int,
) -> Interventions:
    """The page's lesion controls as interventions."""
    items = []
    if edit:
        items.append(EditState(mode=edit, from_step=edit_from, start=edit_start, stop=edit_stop))
    if encoder_steps is not None:
        items.append(EncoderSteps(steps=encoder_steps))
    if clamp:
        items.append(ClampGate(gate=clamp, value=clamp_value, from_step=clamp_from))
    return Interventions.of(*items)


@router.post("/state/run")
def state_run(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName, Form()],
    text: Annotated[FieldText, Form()] = "",
    edit: Annotated[Literal["", "zero", "freeze"], Form()] = "",
    edit_from: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    edit_start: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    edit_stop: Annotated[int | None, Form(ge=1, le=MAX_INDEX)] = None,
    encoder_steps: Annotated[int | None, Form(ge=0, le=MAX_INDEX)] = None,
    clamp: Annotated[Literal["", "update", "reset"], Form()] = "",
    clamp_value: Annotated[float, Form(ge=0.0, le=1.0, allow_inf_nan=False)] = 1.0,
    clamp_from: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
):
    """Run plainly and, when a lesion is set, lesioned; the views follow the lesioned run."""
    lesion = state_lesion(edit, edit_from, edit_start, edit_stop, encoder_steps, clamp, clamp_value, clamp_from)
    run = run_state(runner, model, text, lesion)
    shown = len(run.steps.steps) - 1  # the final state first; the slider plays from step 0
    figures = {name: figure_json(figure) for name, figure in state_figures(run.steps, shown).items()}
    labels = step_labels(run.steps)
    frames = json.dumps(
        {
            "labels": labels,
            "state": rounded(run.steps.state),
        }
    )  # what state.js plays: the heatmaps' z of every step; numbers and step names only
    return render(
        request,
        "partials/state_results.html",
        plain=run.plain,
        lesioned=run.lesioned,
        plain_steps=run.plain_steps,
        diff=run.diff,
        separator=run.separator,
        note=lesion_note(run.lesioned.run.interventions, 0, word_change(run.diff)) if run.lesioned else "",
        figures=figures,
        frames=frames.replace("<", "\\u003c"),
        labels=labels,
        shown=shown,
    )
