"""Every error a user can cause becomes a 4xx with a readable message, in
the form the request came from: JSON {"detail": ...} for the API, an error
fragment for htmx requests (retargeted into the page's error box, so it
shows wherever the request came from), and a page for a browser that
opened an address. A message repeats at most a short excerpt of the input."""

from __future__ import annotations

import logging
import secrets
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from app.figures.ff_views import ViewError
from app.middleware.client_gone import ClientGone
from app.routers.loading import loading_page
from app.routers.rendering import error_page
from app.schemas.validation import InputError, validation_message
from app.services.gateway import UnknownModel
from app.services.gating import ModelRefused
from app.services.model_loading import ModelLoading
from inference.core.checkpoint import CheckpointError
from inference.core.interventions import InterventionError

STATUS = {InputError: 400, InterventionError: 400, ViewError: 400, UnknownModel: 404, CheckpointError: 409}
MAX_MESSAGE_CHARS = 1000
KEPT_INPUT = ("text",)  # what a refused page's links carry on, so the input is not lost
CLIENT_CLOSED = 499  # nobody reads it: the client has gone
log = logging.getLogger("memlens.errors")


def wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/healthz"


def error_response(request: Request, status: int, message: str, headers: dict | None = None) -> Response:
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS] + "…"
    if wants_json(request):
        return JSONResponse({"detail": message}, status_code=status, headers=headers)
    if request.headers.get("HX-Request"):
        fragment = request.app.state.templates.get_template("partials/error.html").render(message=message)
        return HTMLResponse(
            fragment,
            status_code=status,
            headers={**(headers or {}), "HX-Retarget": "#errors", "HX-Reswap": "innerHTML"},
        )
    return error_page(request, status, message)


def refused(request: Request, error: Exception) -> Response:
    """A model the page cannot show: as any error for the API and htmx; for a browser that opened a page's
    address, a page that links to the models the page shows and to the page where the model's views are."""
    assert isinstance(error, ModelRefused)
    if wants_json(request) or request.headers.get("HX-Request"):
        return error_response(request, error.status, str(error))
    page = error.page
    kept = {key: request.query_params[key] for key in KEPT_INPUT if request.query_params.get(key)}
    links = [(name, f"{page.path}?{urlencode({'model': name, **kept})}") for name in error.offered]
    elsewhere = None
    if error.shown_on is not None:
        home, address = error.shown_on, urlencode({"model": error.model, **kept})
        elsewhere = (f"{error.model} is shown on", f"the {home.title} page", f"{home.path}?{address}")
    heading = f"{page.kind[:1].upper()}{page.kind[1:]} models:" if links else ""
    return error_page(request, error.status, str(error), f"No {page.kind} view", links, heading, elsewhere)


def server_error(request: Request, error: Exception) -> Response:
    """Anything else a request raised is the server's fault: a 500 whose message gives an error id, the traceback
    logged under that id, so a reader can report it and an operator can find it."""
    error_id = secrets.token_hex(6)
    log.error("error %s: %s %s raised %s", error_id, request.method, request.url.path, type(error).__name__,
              exc_info=error)  # fmt: skip
    return error_response(
        request, 500, f"something broke on the server (error id {error_id}); the server log has what happened"
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ModelRefused, refused)  # before InputError, of which it is one
    app.add_exception_handler(ModelLoading, loading_page)  # not an error: the page, once its model is loaded
    for error_type, status in STATUS.items():
        app.add_exception_handler(
            error_type, lambda request, error, status=status: error_response(request, status, str(error))
        )
    invalid: tuple[type[Exception], ...] = (RequestValidationError, ValidationError)
    for error_type in invalid:  # the latter from models built inside a route
        app.add_exception_handler(
            error_type, lambda request, error: error_response(request, 422, validation_message(error))
        )
    app.add_exception_handler(
        HTTPException,
        lambda request, error: error_response(request, error.status_code, str(error.detail), error.headers),
    )
    app.add_exception_handler(ClientGone, lambda request, error: Response(status_code=CLIENT_CLOSED))
    app.add_exception_handler(Exception, server_error)  # last: what no handler above claims
