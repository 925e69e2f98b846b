"""Named hook points: the one place where model code exposes its internals.

A model declares a `HookPoint` (an identity module) wherever a quantity is
worth seeing or editing. After construction `name_hook_points` gives every
hook point its module path as a stable name, e.g.
`encoder.layers.2.attn.pattern`. Captures and interventions are forward
hooks registered for the length of one call (`registered_hooks`) and always
removed afterwards, so nothing stays on the model between calls.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

# A hook function sees the tensor flowing through the hook point and the
# hook point itself; it returns a replacement tensor or None to keep it.
HookFn = Callable[[torch.Tensor, "HookPoint"], torch.Tensor | None]


class HookPoint(nn.Module):
    """Identity module that marks a named, documented tensor.

    shape: the tensor's axes in words, e.g. "b h q k".
    axes:  for attention-shaped tensors, the (query axis, key axis) the last
           two dimensions index, e.g. ("enc.seq", "enc"); a Trace maps axes
           to token roles, so analyses never rely on position offsets.
    """

    def __init__(self, shape: str, axes: tuple[str, str] | None = None):
        super().__init__()
        self.shape = shape
        self.axes = axes
        self.name = ""

    @property
    def active(self) -> bool:
        """True while some capture or intervention is registered here."""
        return bool(self._forward_hooks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def extra_repr(self) -> str:
        return f"{self.name!r}, shape={self.shape!r}"


def name_hook_points(model: nn.Module) -> None:
    """Give every hook point its module path as its name."""
    for path, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = path


def hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """All hook points of a model by name, in module order."""
    return {m.name: m for m in model.modules() if isinstance(m, HookPoint)}


def select_hook_names(model: nn.Module, names: Iterable[str] | None) -> list[str]:
    """Resolve exact names or glob patterns ("*.pattern") to hook names.

    Raises ValueError naming any pattern that matches nothing, so a typo
    never yields a silently empty capture.
    """
    available = list(hook_points(model))
    if names is None:
        return available
    selected: list[str] = []
    for pattern in names:
        matches = fnmatch.filter(available, pattern)
        if not matches:
            raise ValueError(f"no hook point matches {pattern!r}; see hook_points(model) for the names")
        selected.extend(m for m in matches if m not in selected)
    return selected


@contextmanager
def registered_hooks(model: nn.Module, hooks: Iterable[tuple[str, HookFn]]) -> Iterator[None]:
    """Register (hook name, fn) pairs for the duration of a with-block.

    Hooks on the same point run in the given order, so interventions listed
    before captures are seen by the captures.
    """
    points = hook_points(model)
    handles = []
    try:
        for name, fn in hooks:
            point = points[name]
            handles.append(point.register_forward_hook(_adapt(fn)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _adapt(fn: HookFn):
    def forward_hook(module: HookPoint, args, output: torch.Tensor):
        return fn(output, module)

    return forward_hook
