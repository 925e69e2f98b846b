"""A server's jobs sharded over 2 Ray workers (MEMLENS_RAY_WORKERS=2) give what the server gives running them
itself: a lesion sweep's BLEU at every memory size, a working-memory corpus's memory, mined trigger examples."""

from __future__ import annotations

import pytest

from app.services.demo import demo_sentences
from app.services.gateway import ModelGateway, RunLimits
from app.services.gating import page_model
from app.services.jobs import JobRunner
from app.services.pages import FF, SWEEP, UPLOAD
from app.services.store import JobStore
from app.services.uploads import Corpus
from inference.core.checkpoint import CheckpointRegistry
from tests.app.test_job_restart import wait_until_finished

GERMAN = [demo.source for demo in demo_sentences()]
ENGLISH = [demo.reference for demo in demo_sentences()]


@pytest.fixture
def runners(checkpoint_dir, tmp_path):
    """(the server running jobs itself, the same server's jobs on Ray), each on its own store."""
    made = []
    for ray_workers in (0, 2):
        gateway = ModelGateway(CheckpointRegistry(checkpoint_dir, "cpu"), RunLimits(2000, 256, 12))
        store = JobStore(tmp_path / f"jobs_{ray_workers}.sqlite3")
        made.append(JobRunner(store, gateway, tmp_path / "no-data", ray_workers=ray_workers))
    yield made
    for runner in made:
        runner.shutdown()


def results(runners, submit) -> list[dict]:
    jobs = [submit(runner) for runner in runners]
    finished = [wait_until_finished(runner.store, job.id, seconds=300) for runner, job in zip(runners, jobs)]
    assert [job.status for job in finished] == ["done", "done"], [job.error for job in finished]
    return [job.result for job in finished]


def test_a_sweep_on_ray_gives_the_bleu_the_server_gives(ray_cluster, runners):
    itself, on_ray = results(
        runners, lambda runner: runner.submit_sweep(page_model(runner.gateway, SWEEP, "tiny_memtransformer"), "demo")
    )
    assert on_ray == itself and len(itself["bleu"]) == len(itself["memory_size"]) > 1


def test_a_working_memory_corpus_on_ray_gives_the_memory_the_server_gives(ray_cluster, runners):
    corpus = Corpus("set.tsv", GERMAN * 10, ENGLISH * 10)

    def submit(runner):
        return runner.submit_corpus(page_model(runner.gateway, UPLOAD, "tiny_working_memory"), corpus)

    itself, on_ray = results(runners, submit)
    assert on_ray == itself and len(itself["memory"]) == len(GERMAN) * 10


def test_mining_on_ray_gives_the_triggers_the_server_gives(ray_cluster, runners):
    def submit(runner):
        return runner.submit_mining(page_model(runner.gateway, FF, "tiny_language_model"), "demo", ENGLISH * 4, None)

    itself, on_ray = results(runners, submit)
    assert on_ray == itself and itself["sentences"] == len(ENGLISH) * 4
