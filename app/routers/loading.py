"""A large model's first open: the page that shows its load (what `ModelFor` answers while it runs), and the
status line that page asks for every second until the model is in memory, when htmx reloads the page asked for."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from app.routers.rendering import render
from app.schemas.validation import ModelName, shown
from app.services.gateway import UnknownModel
from app.services.model_loading import ModelLoading

router = APIRouter(include_in_schema=False)


def loading_page(request: Request, error: Exception) -> Response:
    assert isinstance(error, ModelLoading)
    return render(request, "pages/loading.html", load=error.load)


@router.get("/models/{name}/loading")
def load_status(request: Request, name: Annotated[ModelName, Path()]):
    """The load's status line; once the model is loaded, an empty answer that tells htmx to reload the page."""
    loads = request.app.state.model_loads
    if name not in loads.registry.entries:
        raise UnknownModel(f"unknown model {shown(name)}")
    load = loads.start(name) if loads.slow(name) else loads.of(name)
    if load is None or (load.done and load.error is None):
        return Response(status_code=204, headers={"HX-Refresh": "true"})
    return render(request, "partials/load_status.html", load=load)
