"""Dependency aliases shared by the routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.services.jobs import JobRunner
from app.services.runner import Runner


def get_runner(request: Request) -> Runner:
    return request.app.state.runner


def get_jobs(request: Request) -> JobRunner:
    return request.app.state.jobs


RunnerDep = Annotated[Runner, Depends(get_runner)]
JobsDep = Annotated[JobRunner, Depends(get_jobs)]
