"""The Explore page (one model: attention of every call, lesions, attribution where it applies) and the Compare page
(several models on one sentence), with the htmx fragments they swap in."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request

from app.figures.attention import (
    attention_heatmap,
    attribution_chart,
    block_summary,
    call_grid,
    compare_blocks,
    head_grid,
)
from app.figures.memory_operations import memory_operations_grid
from app.routers.deps import RunnerDep
from app.routers.forms import DecodingDep, LesionDep
from app.routers.rendering import figure_json, redirect_elsewhere, render
from app.schemas.validation import MAX_INDEX, FieldText, InputError, ModelName
from app.services.demo import demo_sentences
from app.services.examples import example_input
from app.services.lesion_notes import lesion_note, word_change
from app.services.pages import COMPARE, EXPLORE
from app.services.runner import Runner
from app.services.textdiff import word_diff
from inference.analyses.attention import attention_stacks, call_indices, layer_attention, pattern_heads
from inference.analyses.blocks import attention_blocks
from inference.analyses.memory_operations import MEMORY_OPERATION_HOOKS, memory_operations
from inference.core.capabilities import Capability
from inference.core.hooks import hook_points
from inference.core.interventions import Interventions, MemorySize

router = APIRouter(include_in_schema=False)


def explore_controls(runner: Runner, model: str) -> dict:
    """What the lesion and view controls offer for one model, from what it can do and its hook points."""
    loaded = runner.model_for(model, EXPLORE)
    points = hook_points(loaded.model)
    capabilities = runner.capabilities(model)
    return {
        "config": loaded.config,
        "capabilities": {capability.value for capability in capabilities},
        "stacks": attention_stacks(loaded.model),
        "heads": pattern_heads(loaded.model),
        "hooks": list(points),
        "call_axis": CALL_AXES.get(next((c for c in capabilities if c in CALL_AXES), None)),
    }


# Capabilities whose models run a layer more than once, and the index that tells the calls apart.
CALL_AXES = {Capability.SEGMENTS: "segment"}


@router.get("/explore")
def explore(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
    memory_size: Annotated[int | None, Query(ge=0, le=MAX_INDEX)] = None,
):
    """model, text and a memory size in the address open a view; without a text the model's example runs."""
    moved = redirect_elsewhere(runner, EXPLORE, model, text)  # its views are on another page
    if moved:
        return moved
    available, model = runner.page_models(model, EXPLORE)
    controls = explore_controls(runner, model)
    config = controls["config"]
    if memory_size is not None and memory_size > config.max_memory_size:
        raise InputError(f"memory size {memory_size} is out of range for {model} (0 to {config.max_memory_size})")
    return render(
        request,
        "pages/explore.html",
        models=available,
        model=model,
        text=text or example_input(runner.registry.entries[model]),
        demos=demo_sentences(),
        memory_size=config.memory_size if memory_size is None else memory_size,
        **controls,
    )


def without_trained_memory(lesion: Interventions, trained: int) -> Interventions:
    """The memory-size slider always sends a size; the trained one is no lesion."""
    return Interventions.of(*(i for i in lesion if not (isinstance(i, MemorySize) and i.size == trained)))


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
    call: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    autoscale: Annotated[bool, Form()] = False,
):
    """Run with and without the lesion; the attention views follow the lesioned run.
    `call`: which segment or step, for a model that runs its layers more than once."""
    controls = explore_controls(runner, model)
    stack = stack or next(iter(controls["stacks"]), "")
    name = runner.pattern_hook(model, stack, layer)  # an unknown stack or layer is refused before the run
    memory = Capability.MEMORY_TOKENS in runner.capabilities(model)
    names = MEMORY_OPERATION_HOOKS if memory else ["*.pattern"]
    plain = runner.trace(model, text, Interventions(), names=names, decoding=decoding)
    lesion = without_trained_memory(lesion, controls["config"].memory_size)
    lesioned = plain if lesion.is_noop() else runner.trace(model, text, lesion, names=names, decoding=decoding)
    calls = [layer_attention(lesioned, stack, layer, **at) for at in call_indices(lesioned.captures[name])]
    if call >= len(calls):
        raise InputError(f"{controls['call_axis'] or 'call'} {call} is out of range (0 to {len(calls) - 1})")
    view = calls[call]
    if head >= view.weights.shape[0]:
        raise InputError(f"head {head} is out of range (0 to {view.weights.shape[0] - 1})")
    figures = {
        "heatmap": figure_json(attention_heatmap(view, head, autoscale)),
        "grid": figure_json(head_grid(view, autoscale=autoscale)),
        "blocks": figure_json(block_summary(attention_blocks(lesioned), stack)),
    }
    if len(calls) > 1:
        figures["calls"] = figure_json(call_grid(calls, head, autoscale=autoscale))
    operations = [h for h in memory_operations(lesioned) if h.stack == stack] if memory else []
    if any(h.memory_queries for h in operations):  # a stack where memory is written (or read)
        figures["operations"] = figure_json(memory_operations_grid(operations, stack))
    translates = Capability.TRANSLATES in lesioned.run.capabilities
    diff = word_diff(plain.outputs[0], lesioned.outputs[0])
    return render(
        request,
        "partials/explore_results.html",
        plain=plain,
        lesioned=lesioned if lesioned is not plain else None,
        translates=translates,
        attributes=Capability.ATTRIBUTION in lesioned.run.capabilities,
        diff=diff,
        note=lesion_note(lesion, controls["config"].memory_size, word_change(diff) if translates else None),
        figures=figures,
        stack=stack,
        layer=layer,
        head=head,
        output_tokens=lesioned.tokens["dec"][0][1:] + ["<eos>"] if translates else [],
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
    available = runner.available(COMPARE)
    chosen = [name for name in COMPARE.opens_on if name in available] or available[:2]
    return render(
        request, "pages/compare.html", models=available, chosen=chosen, text=text or demo_sentences()[0].source
    )


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
    for model in models:
        runner.model_for(model, COMPARE)
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
