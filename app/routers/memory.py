"""The Working memory page (paper 004): one sentence's memory inline with
its translation, the decoder's step-by-step decisions, target-to-memory
attention, and the memory lesions as live controls. Every control either
changes what is shown or the page says why it cannot (`lesion_outcome`,
`attention_note`); a model without working memory gets a 4xx page that
links to the models with one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse

from app.figures.memory import decisions_chart, memory_attention_heatmap
from app.routers.deps import RunnerDep
from app.routers.rendering import error_page, figure_json, render
from app.schemas.validation import MAX_INDEX, FieldText, ModelName, shown
from app.services.examples import example_input, memory_examples
from app.services.pages import MEMORY, home_of
from app.services.runner import MemoryView, Runner
from app.services.textdiff import word_diff
from inference.core.interventions import MAX_LISTED, ForceMemory, Interventions, MaskMemory, MemorySize

router = APIRouter(include_in_schema=False)
MAX_SEED = 2**31 - 1


def unsuitable_model(request: Request, runner: Runner, model: str | None) -> HTMLResponse | None:
    """The 4xx page when `model` cannot be shown here (unknown, broken, no working memory), else None."""
    suitable = runner.available(MEMORY)
    links = [(name, f"/memory?{urlencode({'model': name})}") for name in suitable]
    heading = "Models with working memory:" if links else ""
    title = "No working-memory view"
    if model is None:
        if suitable:
            return None
        return error_page(
            request,
            404,
            "No usable working-memory checkpoint: see the home page for the models and why any is unavailable.",
            title,
            links,
            heading,
        )
    entries = runner.registry.entries
    if model not in entries:
        return error_page(request, 404, f"There is no model named {shown(model)}.", title, links, heading)
    entry = entries[model]
    if not entry.ok:
        return error_page(request, 409, f"{model} cannot be loaded: {entry.error}", title, links, heading)
    if model in suitable:
        return None
    home = home_of(runner.capabilities(model))
    page = (f"the {home.title} page", home.path)
    message = (
        f"{model} has no working memory. "
        "This page shows models whose decoder writes vocabulary tokens into its own input as memory."
    )
    return error_page(
        request,
        400,
        message,
        title,
        links,
        heading,
        (f"{model} is shown on", page[0], f"{page[1]}?{urlencode({'model': model})}"),
    )


def forced_memory_ids(runner: Runner, model: str, text: str) -> tuple[int, ...]:
    """Words typed into the forced-memory box -> their vocabulary ids, in order."""
    tokenizer = runner.model(model).tokenizer
    return tuple(i for word in text.split() for i in tokenizer.encode(word))


@router.get("/memory")
def memory_page(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName | None, Query()] = None,
    text: Annotated[FieldText, Query()] = "",
    seed: Annotated[int, Query(ge=0, le=MAX_SEED)] = 0,
):
    """model, text and seed in the address reproduce a view."""
    refused = unsuitable_model(request, runner, model)
    if refused is not None:
        return refused
    available, model = runner.page_models(model, MEMORY)
    loaded = runner.model(model)
    corpus, examples = memory_examples(model)
    examples = [
        {**e, "href": f"/memory?{urlencode({'model': model, 'text': e['source'], 'seed': 0})}"} for e in examples
    ]
    return render(
        request,
        "pages/memory.html",
        models=available,
        model=model,
        text=text or example_input(runner.registry.entries[model]),
        seed=seed,
        config=loaded.config,
        source_language=loaded.meta.get("source_language", "German"),
        examples=examples,
        examples_corpus=corpus,
    )


def memory_count(view: MemoryView) -> int:
    return sum(1 for t in view.stream if t.kind == "memory")


@dataclass(frozen=True)
class MemoryLesion:
    """The lesion controls of the Working memory page."""

    memory_size: int | None  # None: as trained
    mask: bool
    forced: tuple[int, ...]  # token ids that are the whole memory

    def interventions(self) -> Interventions:
        items = [MemorySize(size=self.memory_size)] if self.memory_size is not None else []
        items += [MaskMemory()] if self.mask else []
        items += [ForceMemory(tokens=self.forced)] if self.forced else []
        return Interventions.of(*items)


def lesion_outcome(plain: MemoryView, lesioned: MemoryView, lesion: MemoryLesion) -> str:
    """What the lesion did to the run, in words: what changed, or why nothing could."""
    before, after = memory_count(plain), memory_count(lesioned)
    if plain.trace.outputs[0] != lesioned.trace.outputs[0]:
        return (
            f"The translation changed (memory: {before} tokens without the lesion, {after} with it); "
            "differences marked."
        )
    same_stream = [(t.token, t.kind) for t in plain.stream] == [(t.token, t.kind) for t in lesioned.stream]
    if not same_stream:
        return f"The memory changed ({before} tokens without the lesion, {after} with it), but the translation did not."
    if before == 0 and not lesion.forced:
        return "Nothing changed: this input wrote no memory tokens, so memory size and mask have nothing to act on."
    reasons = []
    if lesion.memory_size is not None and not lesion.forced:
        reasons.append(f"the model wrote {before} memory tokens, which a memory of {lesion.memory_size} holds as well")
    if lesion.mask:
        reasons.append("with the memory masked the target tokens come out the same")
    if lesion.forced:
        reasons.append("the forced memory is the memory the model wrote itself")
    return "Nothing changed: " + "; ".join(reasons) + "."


def no_memory_note(plain: MemoryView, seed: int) -> str | None:
    if memory_count(plain):
        return None
    return (
        f"This input wrote no memory tokens with seed {seed}: "
        "memory size, mask, seed and the attention view have nothing to act on. "
        "Force memory writes memory anyway, or pick an example sentence that writes memory."
    )


def attention_note(view: MemoryView, lesion: MemoryLesion) -> str | None:
    """Why the target-to-memory attention is empty or zero, when it is."""
    if not view.attention.key_tokens:
        return (
            "No attention to memory to show: this run wrote no memory tokens, "
            "so target tokens have no memory to attend to."
        )
    if lesion.mask:
        return (
            "The memory is masked: target tokens may not attend to it, "
            "so their attention on memory is 0% by construction."
        )
    return None


@router.post("/memory/run")
def memory_run(
    request: Request,
    runner: RunnerDep,
    model: Annotated[ModelName, Form()],
    text: Annotated[FieldText, Form()] = "",
    seed: Annotated[int, Form(ge=0, le=MAX_SEED)] = 0,
    memory_size: Annotated[int | None, Form(ge=0, le=MAX_LISTED)] = None,
    mask_memory: Annotated[bool, Form()] = False,
    forced: Annotated[FieldText, Form()] = "",
    layer: Annotated[int, Form(ge=0, le=MAX_INDEX)] = 0,
):
    """The unlesioned run and, when a lesion is set, the lesioned one; the views follow the lesioned run."""
    trained = runner.model_for(model, MEMORY).config.memory_size
    lesion = MemoryLesion(
        None if memory_size == trained else memory_size,  # the slider always sends a size
        mask_memory,
        forced_memory_ids(runner, model, forced),
    )
    interventions = lesion.interventions()
    plain = runner.memory_view(model, text, Interventions(), seed, layer)
    lesioned = plain if interventions.is_noop() else runner.memory_view(model, text, interventions, seed, layer)
    figures = {"decisions": figure_json(decisions_chart(lesioned.steps))}
    if lesioned.attention.key_tokens:
        figures["memory-attention"] = figure_json(memory_attention_heatmap(lesioned.attention))
    return render(
        request,
        "partials/memory_results.html",
        plain=plain,
        lesioned=lesioned if lesioned is not plain else None,
        lesion=lesion,
        diff=word_diff(plain.trace.outputs[0], lesioned.trace.outputs[0]),
        figures=figures,
        seed=seed,
        outcome=None if lesioned is plain else lesion_outcome(plain, lesioned, lesion),
        no_memory=no_memory_note(plain, seed),
        attention_note=attention_note(lesioned, lesion),
        forced_words=forced.split(),
    )
