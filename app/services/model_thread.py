"""The process's two model threads, which make every model run, and torch's CPU threads given to the first.

Torch's CPU kernels run a loop in parallel on an OpenMP team that belongs to the thread calling them. The server
runs requests on many threads; once two of them had run a parallel loop, there were more OpenMP threads than
cores, and the OpenMP runtime (GNU libgomp) then puts idle team members to sleep at once instead of letting them
spin: every parallel loop waits for a wake-up. On 2 cores a traced run of neural_gpu_addition took 9.6 ms on
one thread and 23.1 ms after three other threads had run a vector add, a matrix product and the state views'
reductions. So every model run of every gateway goes to the model thread, which keeps the team torch would use;
every other thread computes on its own (its tensor work is the views' reductions over a trace), and the same run
took 8.6 ms after those threads' work.

A model none of whose weights reaches torch's grain (the task models, 0.03-0.11M parameters, on inputs of tens of
tokens) gives torch next to nothing to split over threads: a team brought its runs nothing on 2 cores (6.3 against
6.4 ms back to back) and made them wait for its wake-up after a request's other work (a clamp's run 12.4 ms once on
the team, 6.5-6.8 ms on one CPU thread). Its runs go to a second model thread that computes on one CPU thread, so
the team's threads are neither woken nor changed (changing the team's size for them slowed a 64-token translation
from 214 to 237-244 ms). A caller that computes on one CPU thread already (every thread that runs requests, once
`claim_cpu_threads` has run) runs such a model itself: handing it to another thread made a request's run wait
for that thread to wake, on caches the request had not warmed (a warm clamp 13.3-14.1 ms against 12.3-13.4 run in
place, a slot knock-out 14.8-15.2 against 14.4-14.7, blocks of each alternating in one process). Runs still go
one at a time (the gateway's lock).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

MODEL_THREAD = "memlens-model"
ONE_CPU_THREAD = f"{MODEL_THREAD}-one-cpu"
TORCH_GRAIN = 32_768  # torch splits a loop over its CPU threads from this many elements (at::internal::GRAIN_SIZE)
TEAM_FORMING_ELEMENTS = 2 * TORCH_GRAIN  # a vector add this long is a parallel loop
Result = TypeVar("Result")

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=MODEL_THREAD)
_one_cpu = ThreadPoolExecutor(
    max_workers=1, thread_name_prefix=ONE_CPU_THREAD, initializer=torch.set_num_threads, initargs=(1,)
)
_claimed = threading.Lock()
_claimed_threads: list[int] = []  # the model thread's team size, once claimed


def on_model_thread(run: Callable[[], Result], one_cpu_thread: bool = False) -> Result:
    """`run` on the model thread, in the caller's context (its hook scope, its request), the caller waiting;
    run directly where the caller is a model thread. `one_cpu_thread`: for a model that `splits_over_cpu_threads`
    says cannot use more than one CPU thread: run directly where the caller computes on one, else on the model
    thread that does."""
    if threading.current_thread().name.startswith(MODEL_THREAD):
        return run()
    if one_cpu_thread and torch.get_num_threads() == 1:
        return run()
    context = contextvars.copy_context()
    return (_one_cpu if one_cpu_thread else _executor).submit(context.run, run).result()


def splits_over_cpu_threads(model: torch.nn.Module) -> bool:
    """Whether torch can split some of `model`'s products over CPU threads: a weight of at least torch's grain."""
    return any(parameter.numel() >= TORCH_GRAIN for parameter in model.parameters())


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
