"""The MemLens web app: `create_app()` builds it; `memlens serve` runs it."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import jinja2
import js_lib_htmx
import plotly
import swagger_ui_bundle
from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from app import api, ff_api, ff_pages, job_pages, memory_pages, pages
from app.allocator import limit_malloc_arenas
from app.body_limit import LimitBody
from app.client_gone import WatchDisconnect
from app.errors import install_error_handlers
from app.jobs import JobRunner
from app.model_metrics import metric_columns
from app.runner import Runner
from app.schemas import Health
from app.security import SecurityMiddleware
from app.settings import REPO_ROOT, Settings
from app.store import JobStore
from app.validation import shown
from inference.checkpoint import CheckpointRegistry

# Served from the installed packages: the pages and the API docs work with the network off.
VENDOR_FILES = {
    "htmx.min.js": Path(js_lib_htmx.__file__).parent / "static" / "htmx" / "htmx.min.js",
    "plotly.min.js": Path(plotly.__file__).parent / "package_data" / "plotly.min.js",
    "swagger-ui-bundle.js": Path(swagger_ui_bundle.swagger_ui_path) / "swagger-ui-bundle.js",
    "swagger-ui.css": Path(swagger_ui_bundle.swagger_ui_path) / "swagger-ui.css",
}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        limit_malloc_arenas()  # before the worker threads that run requests start
        registry = CheckpointRegistry(
            settings.checkpoint_dir, settings.device, settings.max_models_mb * 2**20
        )  # scans only; models load on first use
        app.state.runner = Runner(
            registry,
            settings.max_text_chars,
            settings.max_source_tokens,
            settings.max_new_tokens,
            recent_trace_bytes=settings.max_cache_mb * 2**20,
        )
        app.state.jobs = JobRunner(JobStore(settings.database), app.state.runner, settings.data_dir)
        yield
        app.state.jobs.shutdown()

    app = FastAPI(
        title="MemLens",
        description="Look inside memory-augmented transformers.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )  # /docs below: FastAPI's own loads Swagger UI from a CDN with an inline script
    app.state.settings = settings
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(REPO_ROOT / "templates"), autoescape=True)
    environment.globals["metric_columns"] = metric_columns
    app.state.templates = Jinja2Templates(env=environment)
    app.mount("/static", StaticFiles(directory=REPO_ROOT / "static"), name="static")

    @app.get("/vendor/{name}", include_in_schema=False)
    def vendor(name: str) -> FileResponse:
        if name not in VENDOR_FILES:
            raise HTTPException(404, f"no vendor file {shown(name)}")
        return FileResponse(VENDOR_FILES[name], headers={"Cache-Control": "max-age=86400"})

    @app.get("/docs", include_in_schema=False)
    def api_docs() -> FileResponse:
        """Swagger UI on /openapi.json, from the vendor files and static/api-docs.js."""
        return FileResponse(REPO_ROOT / "static" / "api-docs.html")

    @app.get("/healthz", tags=["api"], response_model=Health)
    def healthz() -> dict:
        registry = app.state.runner.registry
        return {
            "status": "ok",
            "models": len(registry.available()),
            "broken": len(registry.broken()),
            "device": str(registry.device),
        }

    app.include_router(api.router)
    app.include_router(pages.router)
    app.include_router(job_pages.router)
    app.include_router(memory_pages.router)
    app.include_router(ff_pages.router)
    app.include_router(ff_api.router)
    install_error_handlers(app)
    app.add_middleware(WatchDisconnect)
    app.add_middleware(LimitBody, limit=settings.max_request_bytes)  # every read of the body is bounded
    app.add_middleware(SecurityMiddleware)  # outermost: its headers go on every answer, a 413 included
    return app
