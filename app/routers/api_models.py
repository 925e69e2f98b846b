"""JSON API: the models on offer, and why a broken checkpoint is unavailable."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter

from app.routers.deps import GatewayDep
from app.schemas.api import COMMON_ERRORS, BrokenModel, ModelInfo, ModelsResponse
from inference.analyses.carried_state import carried_state_measure

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


@router.get("/models", response_model=ModelsResponse)
def models(gateway: GatewayDep) -> ModelsResponse:
    registry = gateway.registry
    available = []
    for name in registry.available():
        entry = registry.entries[name]
        assert entry.config is not None  # a usable entry has its config
        measured = carried_state_measure(entry.metrics)
        available.append(
            ModelInfo(
                name=name,
                config=asdict(entry.config),
                capabilities=sorted(gateway.capabilities(name)),
                meta=entry.record.as_json(),
                bleu=entry.metrics.bleu,
                chrf=entry.metrics.chrf,
                lesion=entry.metrics.lesion,
                word_perplexity=entry.metrics.word_perplexity,
                carried_state=None if measured is None else measured.fields(),
            )
        )
    broken = [BrokenModel(name=name, reason=reason) for name, reason in registry.broken().items()]
    return ModelsResponse(models=available, broken=broken)
