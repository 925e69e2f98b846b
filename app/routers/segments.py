"""The Segments page, for any model that reads its input segment by segment
(paper 002's RMT, Transformer-XL and their no-memory baseline): where the
segments lie and which next tokens each gets right, one segment's attention
with its read, sequence, write and cache blocks outlined, the memory's path
across segments, and live memory lesions by segment (reset, slot knock-out,
noise, transplant of another input's memory) re-run on every change."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request

from app.figures.memory_operations import memory_operations_grid
from app.figures.segments import hits_strip, memory_path_figure, probe_figure, segment_attention
from app.routers.deps import RunnerDep
from app.routers.rendering import figure_json, redirect_elsewhere, render
from app.schemas.validation import MAX_INDEX, FieldText, InputError, ModelName
from app.services.examples import example_input
from app.services.lesion_notes import lesion_note, word_change
from app.services.pages import SEGMENTS
from app.services.runner import Runner
from app.services.textdiff import word_diff
from inference.analyses.attention import attention_stacks, layer_attention, pattern_heads
from inference.analyses.memory_operations import MEMORY_OPERATION_HOOKS, memory_operations
from inference.analyses.segments import NextTokenHits, memory_path, next_token_hits, segment_spans
from inference.core.capabilities import Capability
from inference.core.family import family_of
from inference.core.interventions import (
    MAX_FACTOR,
    MAX_LISTED,
    Interventions,
    KnockoutSlots,
    NoiseMemory,
    ResetMemory,
    TransplantMemory,
)
from inference.core.trace import Trace

router = APIRouter(include_in_schema=False)
MAX_SEED = 2**31 - 1


def segment_controls(runner: Runner, model: str) -> dict:
    """What the page offers for one model, from what it can do, its hook points and its checkpoint's meta."""
    loaded = runner.model_for(model, SEGMENTS)
    capabilities = runner.capabilities(model)
    stack, layers = next(iter(attention_stacks(loaded.model).items()))
    return {
        "config": loaded.config,
        "described": loaded.meta.get("variant") or family_of(loaded.config.family).title,
        "memory": Capability.MEMORY_TOKENS in capabilities,
        "cache": Capability.SEGMENT_CACHE in capabilities,
        "stack": stack,
        "layers": layers,
        "heads": pattern_heads(loaded.model),
        "example": example_input(runner.registry.entries[model]),
        "task": loaded.meta.get("task"),
    }


@router.get("/segments")
def segments_page(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
):
    moved = redirect_elsewhere(runner, SEGMENTS, model, text)  # its views are on another page
    if moved:
        return moved
    available, model = runner.page_models(model, SEGMENTS)
    controls = segment_controls(runner, model)
    return render(
        request, "pages/segments.html", models=available, model=model, text=text or controls["example"], **controls
    )


def segment_lesion(
    runner: Runner,
    model: str,
    knockout: list[int],
    reset_at: int | None,
    noise_at: int | None,
    noise_scale: float,
    noise_seed: int,
    transplant_at: int | None,
    donor: str,
) -> Interventions:
    """The page's lesion controls as interventions; the donor text is read by the model's tokenizer here."""
    items = [KnockoutSlots(slots=tuple(knockout))] if knockout else []
    if reset_at is not None:
        items.append(ResetMemory(segment=reset_at))
    if noise_at is not None:
        items.append(NoiseMemory(segment=noise_at, scale=noise_scale, seed=noise_seed))
    if transplant_at is not None:
        if not donor.strip():
            raise InputError("give the other input whose memory to transplant")
        loaded = runner.model(model)
        donor = runner.check_text(loaded, donor)
        items.append(TransplantMemory(segment=transplant_at, donor=tuple(loaded.tokenizer.encode(donor))))
    return Interventions.of(*items)


@router.post("/segments/run")
def segments_run(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName, Form()],
    text: Annotated[FieldText, Form()] = "",
    segment: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    layer: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    head: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
    autoscale: Annotated[bool, Form()] = False,
    knockout: Annotated[list[int], Form(max_length=MAX_LISTED)] = [],  # noqa: B006 (each request gets a copy)
    reset_at: Annotated[int | None, Form(ge=0, le=MAX_INDEX)] = None,
    noise_at: Annotated[int | None, Form(ge=0, le=MAX_INDEX)] = None,
    noise_scale: Annotated[float, Form(gt=0, le=MAX_FACTOR, allow_inf_nan=False)] = 0.5,
    noise_seed: Annotated[int, Form(ge=0, le=MAX_SEED)] = 0,
    transplant_at: Annotated[int | None, Form(ge=0, le=MAX_INDEX)] = None,
    donor: Annotated[FieldText, Form()] = "",
):
    """Run plainly and, when a lesion is set, lesioned; the views follow the lesioned run."""
    controls = segment_controls(runner, model)
    pattern = runner.pattern_hook(model, controls["stack"], layer)  # an unknown layer is refused before the run
    if head >= controls["heads"]:
        raise InputError(f"head {head} is out of range (0 to {controls['heads'] - 1})")
    lesion = segment_lesion(runner, model, knockout, reset_at, noise_at, noise_scale, noise_seed, transplant_at, donor)
    names = MEMORY_OPERATION_HOOKS if controls["memory"] else ["*.pattern"]
    plain = runner.trace(model, text, Interventions(), names=names)
    spans = segment_spans(plain, pattern)  # a lesion changes what segments hold, not where they lie
    if segment >= len(spans.starts):
        raise InputError(f"segment {segment} is out of range: this input has {len(spans.starts)} (0 to "
                         f"{len(spans.starts) - 1})")  # fmt: skip
    for name, at in (("reset", reset_at), ("noise", noise_at), ("transplant", transplant_at)):
        if at is not None and at >= len(spans.starts):
            raise InputError(f"{name} at segment {at}: this input has {len(spans.starts)} segments")
    lesioned = plain if lesion.is_noop() else runner.trace(model, text, lesion, names=names)
    loaded = runner.model(model)
    ids = loaded.tokenizer.encode(plain.sources[0])
    tokens = loaded.tokenizer.display_tokens(ids)
    bos = loaded.config.bos_id
    predicts_each_position = not plain.decoded and len(plain.output_ids[0]) == len(ids)  # else: a decoded output
    plain_hits = next_token_hits(ids, plain.output_ids[0], bos) if predicts_each_position else None
    lesioned_hits = (
        None if lesioned is plain or plain_hits is None else next_token_hits(ids, lesioned.output_ids[0], bos)
    )
    view = layer_attention(lesioned, controls["stack"], layer, segment=segment)
    figures = {"segment": figure_json(segment_attention(view, head, autoscale))}
    if plain_hits is not None:
        figures = {"strip": figure_json(hits_strip(tokens, spans, plain_hits, lesioned_hits)), **figures}
    if controls["memory"] and lesioned.run.memory_size:
        path = memory_path(lesioned, pattern, layer, len(ids))
        figures["path"] = figure_json(memory_path_figure(path, tokens, spans))
        operations = memory_operations(lesioned)
        figures["operations"] = figure_json(memory_operations_grid(operations, controls["stack"]))
    if "memory_probe" in loaded.metrics:  # measured offline: python -m training memory-probe
        figures["probe"] = figure_json(probe_figure(loaded.metrics["memory_probe"], segment))
    return render(
        request,
        "partials/segments_results.html",
        plain=plain,
        lesioned=lesioned if lesioned is not plain else None,
        plain_hits=plain_hits,
        lesioned_hits=lesioned_hits,
        note=lesion_note(
            lesion, lesioned.run.config.memory_size, outcome_change(plain, lesioned, plain_hits, lesioned_hits)
        ),
        spans=spans,
        figures=figures,
        **controls,
    )


def outcome_change(
    plain: Trace, lesioned: Trace, plain_hits: NextTokenHits | None, lesioned_hits: NextTokenHits | None
) -> str:
    """What a lesion did: how many scored positions changed outcome, or (a decoded output) which words changed."""
    if plain_hits is None or lesioned_hits is None:
        return word_change(word_diff(plain.outputs[0], lesioned.outputs[0]))
    changed = sum(a != b for a, b in zip(plain_hits.hits, lesioned_hits.hits) if a is not None)
    scored = sum(a is not None for a in plain_hits.hits)
    return "no position changed outcome" if not changed else f"{changed} of {scored} positions changed outcome, marked"
