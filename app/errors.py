"""Every error a user can cause becomes a 4xx with a readable message: a
JSON {"detail": ...} for the API, an error fragment for htmx requests
(retargeted into the page's error box, so it shows wherever the request
came from)."""

from __future__ import annotations

import html

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import ValidationError

from app.ff_views import ViewError
from app.runner import InputError, UnknownModel
from inference.checkpoint import CheckpointError
from inference.interventions import InterventionError

STATUS = {InputError: 400, InterventionError: 400, ViewError: 400, UnknownModel: 404, CheckpointError: 409}


def error_response(request: Request, status: int, message: str):
    if request.headers.get("HX-Request"):
        fragment = f'<div class="error" role="alert">{html.escape(message)}</div>'
        return HTMLResponse(fragment, status_code=status, headers={"HX-Retarget": "#errors", "HX-Reswap": "innerHTML"})
    return JSONResponse({"detail": message}, status_code=status)


def validation_message(error: RequestValidationError | ValidationError) -> str:
    parts = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem.get("loc", ()) if p not in ("body", "query", "form"))
        parts.append(f"{where}: {problem.get('msg')}" if where else str(problem.get("msg")))
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    for error_type, status in STATUS.items():
        app.add_exception_handler(error_type, lambda request, error, status=status: error_response(request, status, str(error)))
    for error_type in (RequestValidationError, ValidationError):  # the latter from models built inside a route
        app.add_exception_handler(error_type, lambda request, error: error_response(request, 422, validation_message(error)))
