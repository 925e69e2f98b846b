"""Dependency aliases shared by the routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.runner import Runner


def get_runner(request: Request) -> Runner:
    return request.app.state.runner


RunnerDep = Annotated[Runner, Depends(get_runner)]
