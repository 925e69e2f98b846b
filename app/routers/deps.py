"""Dependencies shared by the routers: the model gateway, the job runner, the FF studies, and `ModelFor(page)`,
the model a page shows (or its refusal), for HTML and JSON routes alike."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from app.schemas.validation import ModelName
from app.services.ff_study import FFStudies
from app.services.gateway import ModelGateway
from app.services.gating import PageModel, offered, opening_models, page_model
from app.services.jobs import JobRunner
from app.services.model_loading import ModelLoading
from app.services.pages import Page

MODEL_NAME = TypeAdapter(ModelName)


def get_gateway(request: Request) -> ModelGateway:
    return request.app.state.gateway


def get_jobs(request: Request) -> JobRunner:
    return request.app.state.jobs


def get_ff_studies(request: Request) -> FFStudies:
    return request.app.state.ff_studies


GatewayDep = Annotated[ModelGateway, Depends(get_gateway)]
JobsDep = Annotated[JobRunner, Depends(get_jobs)]
FFStudiesDep = Annotated[FFStudies, Depends(get_ff_studies)]


class ModelFor:
    """The `model` a request names (the address's on GET, the form's or JSON body's on POST), if `page` shows
    it; a GET without one gets the page's first model. Anything else is refused by `page_model`."""

    def __init__(self, page: Page):
        self.page = page

    async def __call__(self, request: Request, gateway: GatewayDep) -> PageModel:
        name = await requested_model(request)
        if name is None and request.method != "GET":
            raise RequestValidationError([{"type": "missing", "loc": ("body", "model"), "msg": "Field required"}])
        if name is not None and name in gateway.registry.loaded():  # no torch work and no wait: answered here
            return page_model(gateway, self.page, name)
        if opens_a_page(request):
            loads, models = request.app.state.model_loads, offered(gateway, self.page)
            wanted = name or next(iter(opening_models(models, self.page)), None)
            if wanted in models and loads.slow(wanted):  # shown loading, then the page; any other refused below
                raise ModelLoading(loads.start(wanted))
        # In a worker thread, as the model runs: torch work on the event loop's thread (loading the model) starts a
        # second OpenMP thread team there, which slowed every later run by about 40% on 2 cores
        # (benchmarks/latency.py).
        return await run_in_threadpool(page_model, gateway, self.page, name)


class ModelInPathFor:
    """The model a path names (/api/ff/{model}/study), declared as the path parameter it is, if `page` shows it."""

    def __init__(self, page: Page):
        self.page = page

    def __call__(self, gateway: GatewayDep, model: Annotated[ModelName, Path()]) -> PageModel:
        return page_model(gateway, self.page, model)


def opens_a_page(request: Request) -> bool:
    """A browser opening a page's address (not htmx's requests inside a page, nor the JSON API)."""
    inside = request.headers.get("HX-Request") or request.url.path.startswith("/api/")
    return request.method == "GET" and not inside


def is_json(content_type: str) -> bool:
    """A JSON body, as FastAPI reads one: application/json or application/<anything>+json."""
    kind = content_type.split(";")[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


async def requested_model(request: Request) -> str | None:
    """The `model` field of the address (GET) or of the body (a form or a JSON object), validated as a name."""
    value: object  # a string, or anything a client sent in its place (a number, a file)
    if request.method == "GET":
        value = request.query_params.get("model")
    elif is_json(request.headers.get("content-type", "")):
        try:
            body = await request.json()  # FastAPI has read it already: Starlette caches it
        except ValueError:  # empty or not JSON: the body's own validation says so
            body = None
        value = body.get("model") if isinstance(body, dict) else None
    else:
        value = (await request.form()).get("model")
    if value is None or value == "":
        return None
    try:
        return MODEL_NAME.validate_python(value)
    except ValidationError as error:
        where = "query" if request.method == "GET" else "body"
        raise RequestValidationError([{**problem, "loc": (where, "model")} for problem in error.errors()]) from None
