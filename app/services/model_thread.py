"""The process's one thread for model runs, and torch's CPU threads given to it.

Torch's CPU kernels run a loop in parallel on an OpenMP team that belongs to the thread calling them. The server
runs requests on many threads; once two of them had run a parallel loop, there were more OpenMP threads than
cores, and the OpenMP runtime (GNU libgomp) then puts idle team members to sleep at once instead of letting them
spin: every parallel loop waits for a wake-up. On 2 cores a traced run of neural_gpu_addition took 9.6 ms on
one thread and 23.1 ms after three other threads had run a vector add, a matrix product and the state views'
reductions. So every model run of every gateway goes to one thread, which keeps the team torch would use; every
other thread computes on its own (its tensor work is the views' reductions over a trace), and the same run took
8.6 ms after those threads' work.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

MODEL_THREAD = "memlens-model"
TEAM_FORMING_ELEMENTS = 2**16  # a vector add this long is a parallel loop (torch's grain is 32,768 elements)
Result = TypeVar("Result")

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=MODEL_THREAD)
_claimed = threading.Lock()
_claimed_threads: list[int] = []  # the model thread's team size, once claimed


def on_model_thread(run: Callable[[], Result]) -> Result:
    """`run` on the model thread, in the caller's context (its hook scope, its request), the caller waiting;
    run directly where the caller is the model thread."""
    if threading.current_thread().name.startswith(MODEL_THREAD):
        return run()
    context = contextvars.copy_context()
    return _executor.submit(context.run, run).result()


def claim_cpu_threads() -> int:
    """Give the model thread torch's CPU threads (as many as torch would use: OMP_NUM_THREADS, else the cores)
    and every thread that has not computed yet one; once a process, before the threads that run requests
    start. Returns the model thread's team size."""
    with _claimed:
        if not _claimed_threads:
            threads = torch.get_num_threads()
            _executor.submit(_form_team, threads).result()
            torch.set_num_threads(1)  # the default of threads whose first parallel loop is still to come
            _claimed_threads.append(threads)
        return _claimed_threads[0]


def _form_team(threads: int) -> None:
    """On the model thread: its team of `threads`, formed by a first parallel loop while that is the default."""
    torch.set_num_threads(threads)
    torch.zeros(TEAM_FORMING_ELEMENTS).add_(1)
