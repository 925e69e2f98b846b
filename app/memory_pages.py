"""The Working memory page (paper 004): one sentence's memory inline with
its translation, the decoder's step-by-step decisions, target-to-memory
attention, and the memory lesions as live controls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request

from app.deps import RunnerDep
from app.memory_figures import decisions_chart, memory_attention_heatmap
from app.pages import figure_json, render
from app.runner import WORKING_MEMORY, Runner
from app.textdiff import word_diff
from inference.interventions import Interventions

router = APIRouter(include_in_schema=False)
MAX_SEED = 2**31 - 1


def forced_memory_ids(runner: Runner, model: str, text: str) -> tuple[int, ...]:
    """Words typed into the forced-memory box -> their vocabulary ids, in order."""
    tokenizer = runner.model(model).tokenizer
    return tuple(i for word in text.split() for i in tokenizer.encode(word))


@router.get("/memory")
def memory_page(
    request: Request, runner: RunnerDep, model: Annotated[str | None, Query()] = None, text: str = "", seed: Annotated[int, Query(ge=0, le=MAX_SEED)] = 0
):
    """model, text and seed in the address reproduce a view."""
    available, model = runner.page_models(model, WORKING_MEMORY)
    loaded = runner.model(model)
    return render(request, "pages/memory.html", models=available, model=model, text=text, seed=seed, config=loaded.config,
                  source_language=loaded.meta.get("source_language", "German"))


@router.post("/memory/run")
def memory_run(
    request: Request,
    runner: RunnerDep,
    model: Annotated[str, Form()],
    text: Annotated[str, Form()] = "",
    seed: Annotated[int, Form(ge=0, le=MAX_SEED)] = 0,
    memory_size: Annotated[int | None, Form(ge=0)] = None,
    mask_memory: Annotated[bool, Form()] = False,
    forced: Annotated[str, Form()] = "",
    layer: Annotated[int, Form(ge=0)] = 0,
):
    """The unlesioned run and, when a lesion is set, the lesioned one; the views follow the lesioned run."""
    trained = runner.model(model).config.memory_size
    lesion = Interventions(
        memory_size=None if memory_size == trained else memory_size,  # the slider always sends a size
        mask_memory=mask_memory,
        forced_memory=forced_memory_ids(runner, model, forced),
    )
    plain = runner.memory_view(model, text, Interventions(), seed, layer)
    lesioned = plain if lesion.is_noop() else runner.memory_view(model, text, lesion, seed, layer)
    figures = {"decisions": figure_json(decisions_chart(lesioned.steps)), "memory-attention": figure_json(memory_attention_heatmap(lesioned.attention))}
    return render(
        request, "partials/memory_results.html", plain=plain, lesioned=lesioned if lesioned is not plain else None, lesion=lesion,
        diff=word_diff(plain.trace.translations[0], lesioned.trace.translations[0]), figures=figures, seed=seed,
    )
