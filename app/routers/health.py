"""/healthz: whether the server answers, and how many models it offers and holds broken ("starting", with no
counts, while it is still scanning its checkpoint folders)."""

from __future__ import annotations

from fastapi import APIRouter

from app.routers.deps import GatewayDep
from app.schemas.api import Health

router = APIRouter()


@router.get("/healthz", tags=["api"], response_model=Health)
def healthz(gateway: GatewayDep) -> dict:
    registry = gateway.registry
    if registry.scanning:
        return {"status": "starting", "models": None, "broken": None, "device": str(registry.device)}
    return {
        "status": "ok",
        "models": len(registry.available()),
        "broken": len(registry.broken()),
        "device": str(registry.device),
    }
