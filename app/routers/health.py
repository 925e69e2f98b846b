"""/healthz: whether the server answers, how many models it offers and holds broken ("starting", with no
counts, while it is still scanning its checkpoint folders), and whether its warm-up is still running."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.routers.deps import GatewayDep
from app.schemas.api import Health

router = APIRouter()


@router.get("/healthz", tags=["api"], response_model=Health)
def healthz(request: Request, gateway: GatewayDep) -> Health:
    registry = gateway.registry
    warming = request.app.state.warm_up
    device, warm_up = str(registry.device), "off" if warming is None else warming.state
    if registry.scanning:
        return Health(status="starting", models=None, broken=None, device=device, warm_up=warm_up)
    models, broken = len(registry.available()), len(registry.broken())
    return Health(status="ok", models=models, broken=broken, device=device, warm_up=warm_up)
