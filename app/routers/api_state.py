"""JSON API of the recurrent-step models (paper 001's Neural GPUs): every step's state, gates and change."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from app.routers.deps import GatewayDep, ModelFor
from app.schemas.api import COMMON_ERRORS, MODEL_ERRORS, StateRequest, StateResponse
from app.services.gating import PageModel
from app.services.pages import STATE
from app.services.state import rounded, run_state

router = APIRouter(prefix="/api", tags=["api"], responses=COMMON_ERRORS)


@router.post("/state", response_model=StateResponse, responses=MODEL_ERRORS)
def state(
    request: StateRequest, gateway: GatewayDep, model: Annotated[PageModel, Depends(ModelFor(STATE))]
) -> StateResponse:
    """A recurrent-step model run on one input, step by step, with the interventions (edit_state zeroes or
    freezes a region of the state from a step on, encoder_steps runs fewer steps, clamp_gate holds a gate):
    the state after every step per map group, the gates, the change per position and step, the tape."""
    run = run_state(gateway, model, request.text, request.interventions)
    steps = run.steps
    return StateResponse(
        output=(run.lesioned or run.plain).outputs[0],
        plain_output=run.plain.outputs[0],
        note=run.note,
        interventions=request.interventions,
        positions=steps.positions,
        steps=steps.steps,
        stacks=steps.stacks,
        map_groups=steps.map_groups,
        state=rounded(steps.state),
        update=rounded(steps.update),
        reset=rounded(steps.reset),
        change=rounded(steps.change),
        tape=rounded(steps.tape) if steps.tape is not None else None,
    )
