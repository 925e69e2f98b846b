"""/healthz: whether the server answers, how many models it offers and holds broken ("starting", with no
counts, while it is still scanning its checkpoint folders), and whether its warm-up is still running."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.routers.deps import GatewayDep
from app.schemas.api import Health

router = APIRouter()


@router.get("/healthz", tags=["api"], response_model=Health)
def healthz(request: Request, gateway: GatewayDep) -> dict:
    registry = gateway.registry
    warming = request.app.state.warm_up
    shown = {"device": str(registry.device), "warm_up": "off" if warming is None else warming.state}
    if registry.scanning:
        return {"status": "starting", "models": None, "broken": None, **shown}
    return {"status": "ok", "models": len(registry.available()), "broken": len(registry.broken()), **shown}
