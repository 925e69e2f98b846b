"""The Working memory page (paper 004): one sentence's memory inline with
its translation, the decoder's step-by-step decisions, target-to-memory
attention, and the memory lesions as live controls. Every control either
changes what is shown or the page says why it cannot; the run is
app/services/memory.py's, shared with /api/memory."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Query, Request

from app.figures.memory import decisions_chart, memory_attention_heatmap
from app.routers.deps import GatewayDep, ModelFor
from app.routers.forms import LesionsDep
from app.routers.rendering import figure_json, render
from app.schemas.validation import FieldText
from app.schemas.views import MemoryFields
from app.services.gating import PageModel
from app.services.memory import run_memory
from app.services.pages import MEMORY
from inference.core.bounds import MAX_SEED
from inference.core.measured_examples import memory_examples

router = APIRouter(include_in_schema=False)
MemoryModel = Annotated[PageModel, Depends(ModelFor(MEMORY))]


@router.get("/memory")
def memory_page(
    request: Request,
    model: MemoryModel,
    text: Annotated[FieldText, Query()] = "",
    seed: Annotated[int, Query(ge=0, le=MAX_SEED)] = 0,
):
    """model, text and seed in the address reproduce a view."""
    corpus, examples = memory_examples(model.name)
    examples = [
        {**e, "href": f"/memory?{urlencode({'model': model.name, 'text': e['source'], 'seed': 0})}"} for e in examples
    ]
    return render(
        request,
        "pages/memory.html",
        models=model.offered,
        model=model.name,
        text=text or model.example,
        seed=seed,
        config=model.loaded.config,
        source_language=model.record.source_language or "German",
        lesion_forms=model.lesion_forms(),
        examples=examples,
        examples_corpus=corpus,
    )


@router.post("/memory/run")
def memory_run(
    request: Request,
    gateway: GatewayDep,
    model: MemoryModel,
    view: Annotated[MemoryFields, Form()],
    lesions: LesionsDep,
    text: Annotated[FieldText, Form()] = "",
):
    """The unlesioned run and, when a lesion is set, the lesioned one; the views follow the lesioned run. The
    lesions are the kinds the model takes (the memory size, the family's mask and forced memory, a scale), in the
    form built from them."""
    lesion = model.lesion(gateway, lesions)
    run = run_memory(gateway, model, text, lesion, view.seed, view.layer)
    figures = {"decisions": figure_json(decisions_chart(run.shown.steps))}
    if run.shown.attention.key_tokens:
        figures["memory-attention"] = figure_json(memory_attention_heatmap(run.shown.attention))
    return render(
        request,
        "partials/memory_results.html",
        plain=run.plain,
        lesioned=run.lesioned,
        lesion=run.lesion,
        diff=run.diff,
        figures=figures,
        seed=view.seed,
        outcome=run.outcome,
        no_memory=run.no_memory,
        attention_note=run.attention_note,
        forced_words=model.loaded.tokenizer.display_tokens(list(run.lesion.forced)),
    )
