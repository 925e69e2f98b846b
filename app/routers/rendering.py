"""How a route answers with HTML: a template, a readable 4xx page, and figure JSON safe inside a page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from fastapi import Request
from fastapi.responses import HTMLResponse

from app.figures.plain import PlainFigure, plain_json
from app.figures.summary import figure_summary


def render(request: Request, template: str, **context) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, template, context)


def error_page(
    request: Request,
    status: int,
    message: str,
    title: str | None = None,
    links: Sequence[tuple[str, str]] = (),
    links_heading: str = "",
    elsewhere: tuple[str, str, str] | None = None,
) -> HTMLResponse:
    """A readable 4xx page: why the request cannot be shown, links (label, href)
    to what can, and optionally (text, label, href) where the request's model is shown."""
    context = {
        "status": status,
        "message": message,
        "title": title,
        "links": links,
        "links_heading": links_heading,
        "elsewhere": elsewhere,
    }
    return request.app.state.templates.TemplateResponse(request, "pages/error.html", context, status_code=status)


@dataclass(frozen=True)
class RenderedFigure:
    json: str  # the figure, safe inside a <script> element
    summary: str  # the figure in words, shown beside it for readers who cannot see it


def figure_json(figure: go.Figure | PlainFigure) -> RenderedFigure:
    """Figure JSON (of a graph object figure, or a plain one) that is safe inside a <script> element, with its
    summary in words. The JSON leaves out Plotly's default template (6.5 KB a figure, a third of a State answer):
    every page loads it once (/vendor/figure-template.js) and static/figures.js puts it back."""
    plain = figure if isinstance(figure, dict) else figure.to_plotly_json()
    layout = {key: value for key, value in plain["layout"].items() if key != "template"}
    text = plain_json({"data": plain["data"], "layout": layout})
    safe = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return RenderedFigure(safe, figure_summary(figure))
