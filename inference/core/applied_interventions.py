"""Applying interventions to a run: `applied_interventions` validates them against the model, asks its
family for the hooks of family-specific kinds (`Family.intervention_hooks`), builds the shared `Scale`
hooks, and keeps them registered for the run; the kinds themselves are inference.core.interventions."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from inference.core.capabilities import config_of
from inference.core.family import family_of_model
from inference.core.hooks import HookFn, HookPoint, hook_points, registered_hooks
from inference.core.interventions import NO_INTERVENTIONS, InterventionError, Interventions, MemorySize, Scale
from inference.core.lesion_kinds import kind_name


@contextmanager
def applied_interventions(model: nn.Module, interventions: Interventions | None) -> Iterator[int]:
    """Register the hooks of `interventions` on `model`; yield the memory size
    to run with. Raises InterventionError before touching the model when the
    interventions do not fit it."""
    interventions = interventions or NO_INTERVENTIONS
    memory_size = effective_memory_size(model, interventions)
    hooks = intervention_hooks(model, interventions, memory_size)
    with registered_hooks(model, hooks):
        yield memory_size


def effective_memory_size(model: nn.Module, interventions: Interventions) -> int:
    config = config_of(model)
    asked = interventions.memory_size
    if asked is None:
        return config.memory_size
    if asked > config.max_memory_size:
        if config.memory_size == 0:
            raise InterventionError(f"memory_size {asked} is out of range: this model has no memory")
        raise InterventionError(
            f"memory_size {asked} is out of range: this model allows 0 to {config.max_memory_size} "
            f"({config.max_memory_size // config.memory_size} x its trained {config.memory_size})"
        )
    return asked


def intervention_hooks(model: nn.Module, interventions: Interventions, memory_size: int) -> list[tuple[str, HookFn]]:
    """Validate `interventions` against the model and return their hooks, in order."""
    family = family_of_model(model)
    takes = family.applicable_lesions(config_of(model))
    # a memory size is checked by effective_memory_size, which allows size 0 (no memory) of any model
    refused = [item.kind_name for item in interventions if type(item) not in (*takes, MemorySize)]
    if refused:
        raise InterventionError(
            f"{refused[0]} does not apply to this {family.name} model; it takes "
            f"{', '.join(kind_name(kind) for kind in takes)}"
        )
    points = hook_points(model)
    hooks: list[tuple[str, HookFn]] = []
    for item in interventions:
        if isinstance(item, MemorySize):
            continue  # an input of the run: effective_memory_size
        if isinstance(item, Scale):
            hooks.append(_scale_hook(points, item))
            continue
        found = family.intervention_hooks(model, item, memory_size)
        if found is None:
            raise InterventionError(f"{item.kind_name} does not apply to a run of this {family.name} model")
        hooks.extend(found)
    return hooks


def _scale_hook(points: dict[str, HookPoint], item: Scale) -> tuple[str, HookFn]:
    point = points.get(item.hook)
    if point is None:
        raise InterventionError(f"unknown hook point {item.hook!r}; `memlens hooks MODEL` lists them")
    if item.axis is None:
        return item.hook, _scaled(None, [], item.factor)
    if item.axis not in point.dims:
        raise InterventionError(f"{item.hook} has no axis {item.axis!r}; its axes are {', '.join(point.dims)}")
    size = point.sizes.get(item.axis)
    if size is None:
        raise InterventionError(f"axis {item.axis!r} of {item.hook} has no fixed size; scale it whole")
    bad = [i for i in item.index if i >= size]
    if bad:
        raise InterventionError(f"{item.axis} {bad} out of range for {item.hook} (0 to {size - 1})")
    return item.hook, _scaled(point.dims.index(item.axis), list(item.index), item.factor)


def _scaled(dim: int | None, index: list[int], factor: float) -> HookFn:
    def hook(tensor: torch.Tensor, point: HookPoint) -> torch.Tensor:
        if dim is None:
            return torch.zeros_like(tensor) if factor == 0 else tensor * factor
        tensor = tensor.clone()
        selector: list[slice | list[int]] = [slice(None)] * tensor.dim()
        selector[dim] = index
        selected = tuple(selector)
        tensor[selected] = 0 if factor == 0 else tensor[selected] * factor
        return tensor

    return hook
