"""The MemLens web app: `create_app()` builds it; `memlens serve` runs it."""

from __future__ import annotations

from contextlib import asynccontextmanager

import jinja2
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from app.middleware.body_limit import LimitBody
from app.middleware.client_gone import WatchDisconnect
from app.middleware.security import SecurityMiddleware
from app.middleware.server_timing import ServerTiming
from app.routers import (
    api_ff,
    api_focus,
    api_jobs,
    api_memory,
    api_models,
    api_state,
    api_translation,
    assets,
    explore,
    ff,
    focus,
    health,
    home,
    jobs,
    loading,
    memory,
    segments,
    state,
    text_length,
)
from app.routers.errors import install_error_handlers
from app.services.allocator import limit_malloc_arenas
from app.services.ff_study import FFStudies
from app.services.gateway import ModelGateway, RunLimits
from app.services.jobs import JobRunner
from app.services.model_loading import ModelLoads
from app.services.model_metrics import metric_columns
from app.services.model_thread import claim_cpu_threads
from app.services.store import JobStore
from app.services.warm_up import WarmUp
from app.settings import Settings
from inference.core import bounds
from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointRegistry
from inference.core.places import REPO_ROOT


def build_gateway(settings: Settings) -> ModelGateway:
    """The models a server (or a job worker) runs: the checkpoint scan runs on its own thread (a server's
    /healthz answers meanwhile) and models load on first use."""
    registry = CheckpointRegistry(
        settings.checkpoint_dir,
        settings.device,
        settings.max_models_mb * 2**20,
        settings.models_dirs,
        scan_in_background=True,
    )
    limits = RunLimits(settings.max_text_chars, settings.max_source_tokens, settings.max_new_tokens)
    return ModelGateway(registry, limits, recent_trace_bytes=settings.max_cache_mb * 2**20)


def job_store(settings: Settings) -> JobStore:
    """The shared store of jobs: the database URL's, else the SQLite file."""
    return JobStore(settings.database_url or settings.database, settings.job_lease_seconds)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        limit_malloc_arenas()  # before the worker threads that run requests start
        claim_cpu_threads()  # so too: torch's CPU threads to the model thread, one to each of them
        app.state.gateway = build_gateway(settings)
        app.state.warm_up = WarmUp(app, app.state.gateway) if settings.warm_up else None
        app.state.ff_studies = FFStudies()
        app.state.model_loads = ModelLoads(app.state.gateway, settings.load_notice_mb * 2**20)
        app.state.jobs = JobRunner(
            job_store(settings), app.state.gateway, settings.data_dir, settings.run_jobs, settings.ray_workers
        )
        yield
        if app.state.warm_up is not None:
            app.state.warm_up.stop()
        app.state.jobs.shutdown()

    app = FastAPI(
        title="MemLens",
        description="Look inside memory-augmented transformers.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )  # /docs is app/routers/assets.py: FastAPI's own loads Swagger UI from a CDN with an inline script
    app.state.settings = settings
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(REPO_ROOT / "templates"), autoescape=True)
    environment.globals.update(metric_columns=metric_columns, Capability=Capability, bounds=bounds)
    app.state.templates = Jinja2Templates(env=environment)
    app.mount("/static", StaticFiles(directory=REPO_ROOT / "static"), name="static")

    for router in (
        assets.router,
        health.router,
        loading.router,
        api_models.router,
        api_translation.router,
        api_jobs.router,
        api_memory.router,
        api_state.router,
        api_focus.router,
        home.router,
        explore.router,
        jobs.router,
        memory.router,
        segments.router,
        state.router,
        focus.router,
        ff.router,
        api_ff.router,
        text_length.router,
    ):
        app.include_router(router)
    install_error_handlers(app)
    app.add_middleware(WatchDisconnect)
    app.add_middleware(LimitBody, limit=settings.max_request_bytes)  # every read of the body is bounded
    app.add_middleware(SecurityMiddleware)  # its headers go on every answer, a 413 included
    app.add_middleware(ServerTiming)  # outermost: the time of every middleware too
    return app
