"""The home page: the models table, and why a broken checkpoint is unavailable."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.routers.deps import GatewayDep
from app.routers.rendering import render
from app.services.pages import pages_of
from app.services.starting_points import starting_points

router = APIRouter(include_in_schema=False)


@router.get("/")
def home(request: Request, gateway: GatewayDep):
    registry = gateway.registry
    models = [registry.entries[name] for name in registry.available()]
    pages = {entry.name: pages_of(gateway.capabilities(entry.name)) for entry in models}
    return render(
        request,
        "pages/home.html",
        models=models,
        pages=pages,
        broken=registry.broken(),
        starting_points=starting_points(gateway),
    )
