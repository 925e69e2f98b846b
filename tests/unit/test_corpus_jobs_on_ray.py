"""Corpus jobs over 2 Ray workers (actors that load the model from its checkpoint folder) equal the job run in
one process exactly: the same BLEU at every memory size, the same memory contents, the same trigger examples."""

from __future__ import annotations

import pytest
import torch

from inference.analyses.ff_values import ff_memories
from inference.core.checkpoint import load_checkpoint, save_checkpoint
from inference.core.family import LoadedModel
from inference.corpus_jobs.job import run_in_process
from inference.corpus_jobs.ray_executor import RayExecutor
from inference.corpus_jobs.states import memory_job, mining_job, sweep_job, translation_job
from tests.conftest import TINY_CORPUS, make_tiny, make_tiny_language_model, make_tiny_working_memory
from tests.unit.test_corpus_jobs import numbered

GERMAN, ENGLISH = TINY_CORPUS[0::2], TINY_CORPUS[1::2]
WORKERS = 2


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_tokenizer):
    root = tmp_path_factory.mktemp("ray_checkpoints")
    models = {
        "translator": make_tiny("memtransformer", tiny_tokenizer),
        "working_memory": make_tiny_working_memory(tiny_tokenizer),
        "language_model": LoadedModel("lm", make_tiny_language_model(tiny_tokenizer), tiny_tokenizer),
    }
    for name, loaded in models.items():
        save_checkpoint(root / name, loaded.model, loaded.tokenizer, meta={"training_data": "tiny test corpus"})
    return {name: root / name for name in models}


def on_ray(folder, job):
    executor = RayExecutor(folder, WORKERS, on_gpus=False)
    try:
        return executor.run(job)
    finally:
        executor.close()


def test_a_sweep_over_two_ray_workers_gives_the_bleu_of_one_process(ray_cluster, folders):
    loaded = load_checkpoint(folders["translator"], "cpu")
    sources, references = numbered(GERMAN, 23), numbered(ENGLISH, 23)
    job = sweep_job(loaded, sources, references, [0, 3, 5], batch_size=4)
    assert on_ray(folders["translator"], job) == run_in_process(job, loaded)


def test_a_corpus_over_two_ray_workers_gives_the_translations_and_blocks_of_one_process(ray_cluster, folders):
    loaded = load_checkpoint(folders["translator"], "cpu")
    job = translation_job(loaded, numbered(GERMAN, 40), numbered(ENGLISH, 40), mixed=True, max_new_tokens=12)
    assert on_ray(folders["translator"], job) == run_in_process(job, loaded)


def test_memory_contents_over_two_ray_workers_equal_one_process(ray_cluster, folders):
    loaded = load_checkpoint(folders["working_memory"], "cpu")
    job = memory_job(numbered(GERMAN, 140), numbered(ENGLISH, 140))
    assert on_ray(folders["working_memory"], job) == run_in_process(job, loaded)


def test_mining_over_two_ray_workers_keeps_the_trigger_examples_of_one_process(ray_cluster, folders):
    loaded = load_checkpoint(folders["language_model"], "cpu")
    layers = ff_memories(loaded.model).layers
    job = mining_job(numbered(ENGLISH, 50), None, 5, layers)
    ours, whole = on_ray(folders["language_model"], job), run_in_process(job, loaded)
    assert ours.sentences_consumed == whole.sentences_consumed == 50
    for layer in layers:
        assert torch.equal(ours.coefficients[layer], whole.coefficients[layer])
        assert torch.equal(ours.sentences[layer], whole.sentences[layer])
        assert torch.equal(ours.positions[layer], whole.positions[layer])


def test_workers_the_cluster_cannot_hold_are_refused_not_left_waiting(ray_cluster, folders):
    with pytest.raises(ValueError, match="3 Ray workers asked; the Ray cluster has 2 CPUs"):
        RayExecutor(folders["translator"], 3, on_gpus=False)
    with pytest.raises(ValueError, match="no GPU"):
        RayExecutor(folders["translator"], 1, on_gpus=True)


def test_a_job_stopped_while_its_shards_run_stops_at_the_next_tick(ray_cluster, folders):
    loaded = load_checkpoint(folders["translator"], "cpu")
    job = sweep_job(loaded, numbered(GERMAN, 64), numbered(ENGLISH, 64), [0, 3, 5], batch_size=2)
    executor = RayExecutor(folders["translator"], WORKERS, on_gpus=False)

    def stop() -> None:
        raise InterruptedError("the worker is stopping")

    try:
        with pytest.raises(InterruptedError):
            executor.run(job, tick=stop, tick_seconds=0.01)
    finally:
        executor.close()
