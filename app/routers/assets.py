"""Files served beside the pages: the vendored JavaScript and CSS (from the installed packages, so the pages
and the API docs work with the network off), Plotly's default template, which the pages' figures leave out, and
the Swagger UI page of /docs."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import js_lib_htmx
import plotly
import plotly.io as pio
import swagger_ui_bundle
from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse, Response

from app.figures.plain import default_template
from app.schemas.validation import shown
from inference.core.places import REPO_ROOT

VENDOR_FILES = {
    "htmx.min.js": Path(js_lib_htmx.__file__).parent / "static" / "htmx" / "htmx.min.js",
    "plotly.min.js": Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
    "swagger-ui-bundle.js": Path(swagger_ui_bundle.swagger_ui_path) / "swagger-ui-bundle.js",
    "swagger-ui.css": Path(swagger_ui_bundle.swagger_ui_path) / "swagger-ui.css",
}

router = APIRouter(include_in_schema=False)


@router.get("/vendor/figure-template.js")
def figure_template() -> Response:
    """Plotly's default template as FIGURE_TEMPLATE, which static/figures.js gives every figure that the pages
    send without it (app/routers/rendering.py)."""
    return Response(template_script(), media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})


@cache
def template_script() -> str:
    return f"const FIGURE_TEMPLATE = {pio.json.to_json_plotly(default_template())};\n"


@router.get("/vendor/{name}")
def vendor(name: str) -> FileResponse:
    if name not in VENDOR_FILES:
        raise HTTPException(404, f"no vendor file {shown(name)}")
    return FileResponse(VENDOR_FILES[name], headers={"Cache-Control": "max-age=86400"})


@router.get("/docs")
def api_docs() -> FileResponse:
    """Swagger UI on /openapi.json, from the vendor files and static/api-docs.js."""
    return FileResponse(REPO_ROOT / "static" / "api-docs.html")
