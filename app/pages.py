"""Full pages and the htmx fragments they swap in."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from app.demo import demo_sentences
from app.deps import RunnerDep
from app.figures import attention_heatmap, attribution_chart, block_summary, compare_blocks, head_grid
from app.runner import LANGUAGE_MODEL, TRANSLATION, WORKING_MEMORY, Runner
from app.textdiff import word_diff
from app.validation import MAX_INDEX, FieldText, InputError, ModelName, parse_number, shown
from inference.analyses.attention import attention_stacks, layer_attention
from inference.analyses.blocks import attention_blocks
from inference.decoding import Decoding
from inference.interventions import MAX_LISTED, HeadRef, Interventions

router = APIRouter(include_in_schema=False)


def render(request: Request, template: str, **context) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, template, context)


def error_page(
    request: Request,
    status: int,
    message: str,
    title: str | None = None,
    links: list[tuple[str, str]] = (),
    links_heading: str = "",
    elsewhere: tuple[str, str, str] | None = None,
) -> HTMLResponse:
    """A readable 4xx page: why the request cannot be shown, links (label, href)
    to what can, and optionally (text, label, href) where the request's model is shown."""
    context = {
        "status": status,
        "message": message,
        "title": title,
        "links": links,
        "links_heading": links_heading,
        "elsewhere": elsewhere,
    }
    return request.app.state.templates.TemplateResponse(request, "pages/error.html", context, status_code=status)


def figure_json(figure) -> str:
    """Figure JSON that is safe inside a <script> element."""
    return figure.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@router.get("/")
def home(request: Request, runner: RunnerDep):
    registry = runner.registry
    models = [registry.entries[name] for name in registry.available()]
    return render(request, "pages/home.html", models=models, broken=registry.broken())


def parse_heads(text: str) -> tuple[HeadRef, ...]:
    """'decoder.layers.1.cross_attn:3, encoder.layers.0.attn:5' -> head references (duplicates dropped)."""
    items = [part.strip() for part in text.split(",") if part.strip()]
    if len(items) > MAX_LISTED:
        raise InputError(f"{len(items):,} heads given; at most {MAX_LISTED:,}")
    heads = []
    for item in items:
        attn, _, head = item.rpartition(":")
        if not attn:
            raise InputError(
                f"cannot read head {shown(item)}: write attention-module:head, e.g. decoder.layers.1.cross_attn:3"
            )
        heads.append(HeadRef(attn=attn.strip(), head=parse_number(head, "head")))
    return tuple(dict.fromkeys(heads))


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


def lesion_form(
    memory_size: Annotated[int | None, Form(ge=0, le=MAX_LISTED)] = None,
    knockout: Annotated[list[int], Form(max_length=MAX_LISTED)] = [],
    block_reads: Annotated[str, Form(max_length=20)] = "none",
    ablate: Annotated[FieldText, Form()] = "",
) -> Interventions:
    """The lesion controls of the Explore form as interventions."""
    return Interventions.model_validate(
        {
            "memory_size": memory_size,
            "knockout_slots": tuple(knockout),
            "block_memory_reads": block_reads,
            "ablate_heads": parse_heads(ablate),
        }
    )


LesionDep = Annotated[Interventions, Depends(lesion_form)]


def decoding_form(
    decoding: Annotated[Literal["greedy", "beam"], Form()] = "greedy",
    beam_size: Annotated[int, Form(ge=1, le=8)] = 4,
    length_penalty: Annotated[float, Form(ge=0, le=2, allow_inf_nan=False)] = 0.6,
) -> Decoding:
    """The decoding controls of the Explore and Compare forms."""
    return Decoding(method=decoding, beam_size=beam_size, length_penalty=length_penalty)


DecodingDep = Annotated[Decoding, Depends(decoding_form)]


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
    models: Annotated[list[ModelName], Form(max_length=6)] = [],
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
