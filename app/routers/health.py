"""/healthz: whether the server answers, and how many models it offers and holds broken."""

from __future__ import annotations

from fastapi import APIRouter

from app.routers.deps import GatewayDep
from app.schemas.api import Health

router = APIRouter()


@router.get("/healthz", tags=["api"], response_model=Health)
def healthz(gateway: GatewayDep) -> dict:
    registry = gateway.registry
    return {
        "status": "ok",
        "models": len(registry.available()),
        "broken": len(registry.broken()),
        "device": str(registry.device),
    }
