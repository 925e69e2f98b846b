"""The State page, for any model that rewrites a state tensor step by step
(paper 001's Neural GPUs): the state at a chosen step per map group, a step
slider that plays the computation, the update and reset gates and the
state's change per position and step (where a carry travels), the output
tape of a model that writes one, and live lesions of the state (the
family's own kinds: a region zeroed or frozen from a step on, fewer encoder
steps, a gate clamped) with the changed output marked."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Form, Query, Request

from app.figures.state import state_figures, step_labels
from app.routers.deps import GatewayDep, ModelFor
from app.routers.forms import LesionsDep
from app.routers.rendering import figure_json, render
from app.schemas.validation import FieldText
from app.services.gating import PageModel
from app.services.pages import STATE
from app.services.state import examples, rounded, run_state

router = APIRouter(include_in_schema=False)


StateModel = Annotated[PageModel, Depends(ModelFor(STATE))]


@router.get("/state")
def state_page(request: Request, model: StateModel, text: Annotated[FieldText, Query()] = ""):
    task = model.record.task
    presets = examples(task, model.example)
    return render(
        request,
        "pages/state.html",
        models=model.offered,
        model=model.name,
        text=text or (presets[0][1] if presets else ""),
        config=model.loaded.config,
        described=model.record.description or model.loaded.family.title,
        task=task,
        examples=presets,
        lesion_forms=model.lesion_forms(),
    )


@router.post("/state/run")
def state_run(
    request: Request,
    gateway: GatewayDep,
    model: StateModel,
    lesions: LesionsDep,
    text: Annotated[FieldText, Form()] = "",
):
    """Run plainly and, when a lesion is set, lesioned; the views follow the lesioned run. The state lesions are
    the kinds the model takes (its family's own and a scale), in the form built from them
    (partials/lesions.html)."""
    run = run_state(gateway, model, text, model.lesion(gateway, lesions))
    shown = len(run.steps.steps) - 1  # the final state first; the slider plays from step 0
    figures = {name: figure_json(figure) for name, figure in state_figures(run.steps, shown).items()}
    labels = step_labels(run.steps)
    frames = orjson.dumps(
        {
            "labels": labels,
            "state": rounded(run.steps.state),
        }
    ).decode()  # what state.js plays: the heatmaps' z of every step (5,184 values: json took 1.2 ms, orjson 0.14)
    return render(
        request,
        "partials/state_results.html",
        plain=run.plain,
        lesioned=run.lesioned,
        plain_steps=run.plain_steps,
        diff=run.diff,
        separator=run.separator,
        note=run.note,
        figures=figures,
        frames=frames.replace("<", "\\u003c"),
        labels=labels,
        shown=shown,
    )
