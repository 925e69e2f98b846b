"""The Explore page (one translation model: attention, lesions, attribution) and the Compare page
(several models on one sentence), with the htmx fragments they swap in."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse

from app.figures.attention import attention_heatmap, attribution_chart, block_summary, compare_blocks, head_grid
from app.routers.deps import RunnerDep
from app.routers.forms import DecodingDep, LesionDep
from app.routers.rendering import figure_json, render
from app.schemas.validation import MAX_INDEX, FieldText, InputError, ModelName, shown
from app.services.demo import demo_sentences
from app.services.runner import LANGUAGE_MODEL, TRANSLATION, WORKING_MEMORY, Runner
from app.services.textdiff import word_diff
from inference.analyses.attention import attention_stacks, layer_attention
from inference.analyses.blocks import attention_blocks
from inference.core.interventions import Interventions

router = APIRouter(include_in_schema=False)


def explore_controls(runner: Runner, model: str) -> dict:
    """What the lesion and view controls offer for one model."""
    loaded = runner.translator(model)
    return {"config": loaded.config, "stacks": attention_stacks(loaded.model)}


@router.get("/explore")
def explore(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
):
    if model in runner.available(WORKING_MEMORY):  # its views are on the Working memory page
        return RedirectResponse(f"/memory?{urlencode({'model': model, 'text': text})}", status_code=303)
    if model in runner.available(LANGUAGE_MODEL):  # and the language model's on the FF memories page
        return RedirectResponse(f"/ff?{urlencode({'model': model, 'text': text})}", status_code=303)
    available, model = runner.page_models(model, TRANSLATION)
    return render(
        request,
        "pages/explore.html",
        models=available,
        model=model,
        text=text,
        demos=demo_sentences(),
        **explore_controls(runner, model),
    )


@router.post("/explore/run")
def explore_run(
    request: Request,
    runner: RunnerDep,
    lesion: LesionDep,
    decoding: DecodingDep,
    model: Annotated[ModelName, Form()],
    text: Annotated[FieldText, Form()] = "",
    stack: Annotated[str, Form(max_length=100)] = "",
    layer: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    head: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    autoscale: Annotated[bool, Form()] = False,
):
    """Translate with and without the lesion; the attention views follow the lesioned run."""
    stacks = explore_controls(runner, model)["stacks"]
    stack = stack or next(iter(stacks))
    if stack not in stacks:
        raise InputError(f"unknown stack {shown(stack)}; this model has {', '.join(stacks)}")
    if layer >= stacks[stack]:
        raise InputError(f"layer {layer} is out of range (0 to {stacks[stack] - 1})")
    plain = runner.trace(model, text, Interventions(), names=["*.pattern"], decoding=decoding)
    if (
        lesion.memory_size == plain.config["memory_size"]
    ):  # the slider always sends a size; the trained one is no lesion
        lesion = lesion.model_copy(update={"memory_size": None})
    lesioned = plain if lesion.is_noop() else runner.trace(model, text, lesion, names=["*.pattern"], decoding=decoding)
    view = layer_attention(lesioned, stack, layer)
    if head >= view.weights.shape[0]:
        raise InputError(f"head {head} is out of range (0 to {view.weights.shape[0] - 1})")
    figures = {
        "heatmap": figure_json(attention_heatmap(view, head, autoscale)),
        "grid": figure_json(head_grid(view, autoscale=autoscale)),
        "blocks": figure_json(block_summary(attention_blocks(lesioned), stack)),
    }
    return render(
        request,
        "partials/explore_results.html",
        plain=plain,
        lesioned=lesioned if lesioned is not plain else None,
        diff=word_diff(plain.translations[0], lesioned.translations[0]),
        figures=figures,
        stack=stack,
        layer=layer,
        head=head,
        output_tokens=lesioned.tokens["dec"][0][1:] + ["<eos>"],
        decoding=decoding,
    )


@router.post("/explore/attribution")
def explore_attribution(
    request: Request,
    runner: RunnerDep,
    lesion: LesionDep,
    decoding: DecodingDep,
    model: Annotated[ModelName, Form()],
    position: Annotated[int, Form(ge=0, le=MAX_INDEX)],
    text: Annotated[FieldText, Form()] = "",
):
    attribution = runner.attribution(model, text, position, lesion, decoding)
    return render(
        request, "partials/figures.html", figures={"attribution": figure_json(attribution_chart(attribution))}
    )


@router.get("/compare")
def compare_page(request: Request, runner: RunnerDep, text: Annotated[FieldText, Query()] = ""):
    return render(request, "pages/compare.html", models=runner.available(TRANSLATION), text=text)


@router.post("/compare/run")
def compare_run(
    request: Request,
    runner: RunnerDep,
    decoding: DecodingDep,
    models: Annotated[list[ModelName], Form(max_length=6)] = [],  # noqa: B006 (each request gets a copy)
    text: Annotated[FieldText, Form()] = "",
):
    if len(models) < 2:
        raise InputError("choose at least two models to compare")
    traces = {
        model: runner.trace(model, text, Interventions(), names=["*.pattern"], decoding=decoding)
        for model in dict.fromkeys(models)
    }
    blocks = {model: attention_blocks(trace) for model, trace in traces.items()}
    return render(
        request,
        "partials/compare_results.html",
        traces=traces,
        decoding=decoding,
        figures={"compare": figure_json(compare_blocks(blocks))},
    )
