"""The process's one model thread: every model run goes there, and it alone keeps torch's CPU threads, so no
second OpenMP team puts the first to sleep between its parallel loops."""

from __future__ import annotations

import contextvars
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from app.services.model_thread import (
    MODEL_THREAD,
    ONE_CPU_THREAD,
    claim_cpu_threads,
    on_model_thread,
    splits_over_cpu_threads,
)
from inference.core.checkpoint import load_checkpoint

REQUEST = contextvars.ContextVar("request", default="none")


def test_a_run_goes_to_the_model_thread_with_the_callers_context_and_its_errors():
    REQUEST.set("caller's")
    assert on_model_thread(lambda: (threading.current_thread().name.split("_")[0], REQUEST.get())) == (
        MODEL_THREAD,
        "caller's",
    )
    with pytest.raises(KeyError, match="no such key"):
        on_model_thread(lambda: {}["no such key"])
    # a run that asks for the model thread from the model thread runs at once instead of waiting for itself
    assert on_model_thread(lambda: on_model_thread(lambda: 6 * 7)) == 42


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_only_the_model_thread_keeps_torchs_cpu_threads():
    team = claim_cpu_threads()
    assert on_model_thread(torch.get_num_threads) == team
    assert claim_cpu_threads() == team  # once a process

    def a_request_threads_parallel_loop() -> tuple[int, int]:
        before = os_threads()
        torch.zeros(2**20).add_(1)  # 32 times torch's grain: a parallel loop wherever there are threads for it
        return torch.get_num_threads(), os_threads() - before

    with ThreadPoolExecutor(max_workers=1) as request_thread:
        assert request_thread.submit(a_request_threads_parallel_loop).result() == (1, 0)  # no team of its own


def test_a_model_too_small_to_split_runs_on_one_cpu_thread_in_place_where_the_caller_computes_on_one():
    assert not splits_over_cpu_threads(torch.nn.Linear(100, 300))  # 30,000 weights: under torch's grain, 32,768
    assert splits_over_cpu_threads(torch.nn.Linear(128, 256))  # 32,768
    assert not splits_over_cpu_threads(load_checkpoint("checkpoints/neural_gpu_addition", "cpu").model)
    assert splits_over_cpu_threads(load_checkpoint("checkpoints/memtransformer_10", "cpu").model)

    def where() -> tuple[str, int, int]:
        before = os_threads()
        torch.zeros(2**20).add_(1)  # a parallel loop where there are threads for it
        return threading.current_thread().name.split("_")[0], torch.get_num_threads(), os_threads() - before

    claim_cpu_threads()  # as the server does at start-up: every thread that runs requests computes on one

    def from_a_request_thread() -> tuple[str, int, int]:
        name, threads, team = where()
        return ("the caller" if name == threading.current_thread().name.split("_")[0] else name), threads, team

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="request") as request_thread:  # runs it in place
        assert request_thread.submit(on_model_thread, from_a_request_thread, True).result() == ("the caller", 1, 0)

    def from_a_thread_of_two() -> tuple[str, int, int]:  # e.g. a script's main thread, before any claim
        torch.set_num_threads(2)
        return on_model_thread(where, one_cpu_thread=True)

    with ThreadPoolExecutor(max_workers=1) as caller:
        assert caller.submit(from_a_thread_of_two).result() == (ONE_CPU_THREAD, 1, 0)  # no team of its own
    assert on_model_thread(lambda: on_model_thread(where, one_cpu_thread=True))[0] == MODEL_THREAD  # in place
