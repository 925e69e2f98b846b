"""Server settings, read from MEMLENS_* environment variables."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from inference.core.decoding import MAX_NEW_TOKENS
from inference.core.places import CHECKPOINTS_DIR, DEFAULT_DATA_DIR, REPO_ROOT


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMLENS_")

    checkpoint_dir: Path = Field(CHECKPOINTS_DIR, description="folder of checkpoint folders")
    models_dirs: list[Path] = Field(
        [], description="more folders of model folders, e.g. MEMLENS_MODELS_DIRS='[\"/data/models\"]'"
    )
    device: str = Field("auto", description="auto (CUDA when available), cpu, cuda, cuda:N")
    data_dir: Path = Field(DEFAULT_DATA_DIR, description="raw corpora (training and reference sets)")
    max_text_chars: int = Field(2000, description="longest input text accepted")
    max_source_tokens: int = Field(256, description="longest input in tokens")
    max_new_tokens: int = Field(MAX_NEW_TOKENS, description="longest translation decoded")
    max_upload_bytes: int = Field(1_000_000, description="largest uploaded corpus file")
    max_upload_lines: int = Field(2000, description="most sentences in an uploaded corpus")
    max_request_bytes: int = Field(2_000_000, description="largest request body (an upload included)")
    max_cache_mb: int = Field(256, description="memory for recent traces, which make a repeated view instant")
    max_models_mb: int = Field(4096, description="memory for loaded models; the least recently used is unloaded first")
    load_notice_mb: int = Field(
        100,
        ge=0,
        description="a page opening a model whose weights are larger than this (and not yet loaded) shows the load "
        "as it runs instead of waiting silently",
    )
    database: Path = Field(REPO_ROOT / "runs" / "memlens.sqlite3", description="SQLite file of jobs and results")
    database_url: str | None = Field(
        None,
        description="the shared job store as a SQLAlchemy URL, e.g. postgresql+psycopg://memlens@db-host/memlens "
        "(the postgres extra); unset: the SQLite file `database`",
    )
    run_jobs: bool = Field(
        True, description="run queued jobs on a thread of this server; false: `memlens worker` processes run them"
    )
    ray_workers: int = Field(
        0,
        ge=0,
        le=256,
        description="shard the corpus jobs this process runs over this many Ray actors (the ray extra; Ray joins "
        "RAY_ADDRESS's cluster, else starts a local one at the first job); 0: run them in this process",
    )
    job_lease_seconds: float = Field(
        30.0,
        gt=0,
        description="how long a job worker's claim lasts unless renewed: a dead worker's job is "
        "requeued this long after it died",
    )
    warm_up: bool = Field(
        True, description="after start-up, load and run once the models each page opens on (in the background)"
    )
