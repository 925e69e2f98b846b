"""Which model a page shows: the one way a request is given a model, or
refused one. A page shows the models whose capabilities meet its needs
(app/services/pages.py); a model it cannot show is refused before it is
loaded, saying where that model's views are and which models the page
shows. `ModelFor(page)` (app/routers/deps.py) calls `page_model` for every
route; a route that names a second model (Focus's other, Compare's list)
calls it for each."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.schemas.validation import InputError, shown
from app.services.examples import example_input
from app.services.gateway import ModelGateway
from app.services.lesion_forms import (
    NO_LESIONS_ASKED,
    AskedLesions,
    LesionKindForm,
    lesion_forms_for,
    parse_lesion_forms,
    words_to_ids,
)
from app.services.pages import Page, pages_of
from inference.core.capabilities import Capability
from inference.core.family import LoadedModel, capabilities_of
from inference.core.interventions import Interventions, Scale
from inference.core.model_record import ModelRecord


class ModelRefused(InputError):
    """A model a page cannot show (or none to show): the status, and the page and models to go to instead."""

    def __init__(
        self, message: str, status: int, page: Page, offered: list[str], model: str = "", shown_on: Page | None = None
    ):
        super().__init__(message)
        self.status = status
        self.model = model  # the name asked for; "" where none was
        self.page = page
        self.offered = offered  # the usable models the page shows
        self.shown_on = shown_on  # where the refused model's views are, when it has any


@dataclass(frozen=True)
class PageModel:
    """A loaded model a page shows, with what the page needs to know of it."""

    name: str
    loaded: LoadedModel
    capabilities: frozenset[Capability]
    offered: list[str]  # every usable model the page shows (its model menu)
    example: str  # what the page runs when the address names no input
    folder: Path  # the checkpoint's folder

    @property
    def record(self) -> ModelRecord:
        """How the model was made (its checkpoint's run record)."""
        return self.loaded.record

    def can(self, capability: Capability) -> bool:
        return capability in self.capabilities

    def lesion_forms(self, preset: AskedLesions = NO_LESIONS_ASKED) -> list[LesionKindForm]:
        """The forms of every lesion kind the model takes, `preset`'s ticked and filled in."""
        return lesion_forms_for(self.loaded, preset)

    def lesion(self, gateway: ModelGateway, asked: AskedLesions, *scales: Scale) -> Interventions:
        """The lesions a page's form asks for, and `scales` its shortcuts wrote, as interventions on this model: a
        kind's words and inputs read as this model's tokens (an input checked as the gateway checks a text), a
        kind the model does not take refused, a memory size equal to its trained one no lesion."""
        tokenizer = self.loaded.tokenizer
        readers = {
            "words": lambda text: words_to_ids(tokenizer, text),
            "input": lambda text: tokenizer.encode(gateway.check_text(self.loaded, text)),
        }
        return Interventions.of(*parse_lesion_forms(asked, self.lesion_forms(), readers), *scales)


def offered(gateway: ModelGateway, page: Page) -> list[str]:
    """The usable models `page` shows."""
    return [name for name in gateway.registry.available() if _shows(gateway, page, name)]


def opening_models(models: list[str], page: Page) -> list[str]:
    """The models `page` opens on when the address names none, of the `models` it offers: those of its `opens_on`
    it offers, else as many of its first models as `opens_on` names (Compare opens on two), at least one."""
    return [name for name in page.opens_on if name in models] or models[: max(1, len(page.opens_on))]


def _shows(gateway: ModelGateway, page: Page, name: str) -> bool:
    entry = gateway.registry.entries[name]
    assert entry.config is not None  # a usable entry has its config
    return page.shows(capabilities_of(entry.config)) and (not page.reads_language or bool(entry.record.source_language))


def page_model(gateway: ModelGateway, page: Page, name: str | None) -> PageModel:
    """The model `name` if `page` shows it, loaded; None: the page's first of `opens_on` that is usable, else its
    first usable model. Refused with ModelRefused: unknown (404), broken (409), shown on another page or reading
    no natural language (400), or no usable model at all (404)."""
    models = offered(gateway, page)
    if name is None:
        if not models:
            raise ModelRefused(
                f"no usable {page.kind} checkpoint: see the home page for the models and why any is unavailable",
                404,
                page,
                models,
                "",
            )
        name = opening_models(models, page)[0]
    entry = gateway.registry.entries.get(name)
    listed = ", ".join(models) or "none"
    if entry is None:
        raise ModelRefused(f"unknown model {shown(name)}; {page.kind} models: {listed}", 404, page, models, name)
    if not entry.ok:
        raise ModelRefused(f"checkpoint {name!r} is unavailable: {entry.error}", 409, page, models, name)
    if name not in models:
        assert entry.config is not None
        capabilities = capabilities_of(entry.config)
        if page.shows(capabilities):  # it can, but reads no natural language
            task = entry.record.task
            trained = f" (it was trained on the {task} task)" if task else ""
            message = f"{name} reads no natural language{trained}; {page.kind} models: {listed}"
            raise ModelRefused(message, 400, page, models, name)
        shown_on = pages_of(capabilities)
        named = [f"{page.title} ({page.path})" for page in shown_on]
        where = f"the {', '.join(named[:-1])} and {named[-1]} pages" if len(named) > 1 else f"the {named[0]} page"
        raise ModelRefused(
            f"{name} is not {'an' if page.kind[0] in 'aeiou' else 'a'} {page.kind} model: its views are on {where}; "
            f"{page.kind} models: {listed}",
            400,
            page,
            models,
            name,
            shown_on[0],
        )
    loaded = gateway.model(name)
    return PageModel(name, loaded, capabilities_of(loaded.config), models, example_input(entry), entry.path)
