"""Data-parallel training over the ranks torchrun starts (`torchrun --nproc-per-node N -m training train CONFIG`):
gloo on CPU, NCCL on GPU. Every rank holds the whole model and takes its share of each global batch (the batch's
rows rank, rank + N, ..., padded as the whole batch is: the per-rank batch is the global batch / N); after the
backward pass the ranks' gradients are summed, each rank's loss having been weighted by its share of the global
batch's target tokens, so that every rank takes the step one process would take on the whole batch. Only rank 0
writes the run's state, logs and checkpoint. A run's progress counts global batches, so a run saved at one world
size resumes at another.

The gradients are summed by hand after the backward pass rather than by wrapping the model in
DistributedDataParallel: a family's loss calls the model's own methods (an encoder, a memory step), not only its
forward, and DDP's wrapper hides them; the sum is the one DDP's all-reduce takes."""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch
import torch.distributed as dist
from torch import nn

from inference.core.losses import BatchShare
from inference.core.places import select_device
from training.loop.steps import GradientHook

T = TypeVar("T")


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world: int = 1
    device: str = "cpu"  # where the tensors of collectives live: the rank's GPU under NCCL

    @property
    def main(self) -> bool:
        """The rank that writes the run's state, logs and checkpoint."""
        return self.rank == 0

    def share(self, rows: int) -> BatchShare:
        """This rank's part of a global batch of `rows` rows: the rows rank, rank + N, ..."""
        return BatchShare(tuple(range(self.rank, rows, self.world)), rows, self.total)

    def total(self, value: float) -> float:
        """`value` summed over the ranks."""
        if self.world == 1:
            return value
        summed = self._scalar(value)
        dist.all_reduce(summed)
        return summed.item()

    def from_main(self, value: float) -> float:
        """Rank 0's `value` on every rank: a decision taken on numbers every rank computes alike (a validation
        score, a curriculum's check) follows rank 0's, should a GPU's kernels round them apart."""
        if self.world == 1:
            return value
        sent = self._scalar(value)
        dist.broadcast(sent, src=0)
        return sent.item()

    def _scalar(self, value: float) -> torch.Tensor:  # [1], where the backend's collectives take it
        return torch.tensor([value], dtype=torch.float64, device=self.device)

    def part(self, loss: torch.Tensor, count: int, total: float | None = None) -> torch.Tensor:
        """`loss`, a mean over this rank's `count` terms (target tokens), as this rank's part of the mean over
        every rank's `total` terms (summed here when not given): the parts, summed by the gradient sum, are the
        global batch's mean."""
        if self.world == 1:
            return loss
        return loss * (count / (self.total(count) if total is None else total))

    def sum_gradients(self, model: nn.Module) -> None:
        """Every parameter's gradient summed over the ranks (a parameter this rank's batch left without one counts
        as zero), in one all-reduce of a flat buffer."""
        parameters = [p for p in model.parameters() if p.requires_grad]
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in parameters])
        dist.all_reduce(flat)
        offset = 0
        for p in parameters:
            p.grad = flat[offset : offset + p.numel()].view_as(p).clone()
            offset += p.numel()

    def gradient_hook(self, hook: GradientHook | None = None) -> GradientHook | None:
        """The step loop's gradient hook on these ranks: the gradients summed over them, then `hook` (a run's own,
        e.g. gradient noise); `hook` itself in one process."""
        if self.world == 1:
            return hook

        def hooks(model: nn.Module, step: int) -> None:
            self.sum_gradients(model)
            if hook is not None:
                hook(model, step)

        return hooks

    def main_first(self, make: Callable[[], T]) -> T:
        """`make()` on rank 0, then on the others (what it writes, a run folder, a vocabulary, a tokenized
        corpus, rank 0 writes alone and the others read)."""
        if self.world == 1:
            return make()
        if self.main:
            made = make()
            dist.barrier()
            return made
        dist.barrier()
        return make()

    def same_start(self, model: nn.Module) -> None:
        """Every rank's weights made rank 0's (as DistributedDataParallel does when it wraps a model)."""
        if self.world > 1:
            for tensor in model.state_dict().values():
                dist.broadcast(tensor, src=0)


ONE_PROCESS = Ranks()


def _leave_ranks() -> None:
    """The process group destroyed while the interpreter is still whole: left to the interpreter's teardown,
    gloo's worker threads outlive the objects they hold and the process aborts at exit ("terminate called without
    an active exception", SIGABRT), failing the torchrun launch after the run itself succeeded."""
    if dist.is_initialized():
        dist.destroy_process_group()


def _import_what_captures_the_group() -> None:
    """torch's modules that take the default process group as a default argument (`group=group.WORLD`, in
    torch.distributed.nn.functional among others), imported while there is none yet. The optimizer's first step
    imports them through torch._dynamo; imported after the group is made, their defaults keep it alive past
    destroy_process_group, and its gloo threads then die in the interpreter's teardown: the abort above."""
    import torch._dynamo  # noqa: F401


def join_ranks(device: str) -> tuple[Ranks, torch.device]:
    """This process's rank among those torchrun started (its WORLD_SIZE, RANK and rendezvous variables), joined
    into a process group, and its device (`device` as select_device reads it; on GPUs, the rank's own: torchrun's
    LOCAL_RANK); ONE_PROCESS where torchrun did not start it."""
    chosen = select_device(device)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return ONE_PROCESS, chosen
    if chosen.type == "cuda":
        chosen = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(chosen)
    if not dist.is_initialized():
        _import_what_captures_the_group()
        dist.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
        atexit.register(_leave_ranks)
    return Ranks(dist.get_rank(), dist.get_world_size(), str(chosen)), chosen
