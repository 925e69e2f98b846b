"""Named hook points: the one place where model code exposes its internals.

A model declares a `HookPoint` (an identity module) wherever a quantity is
worth seeing or editing, naming every axis of the tensor that passes
(`dims`) and, for axes that run over token positions, which token axis of
the run they index (`positions`, e.g. {"query": "enc.seq", "key": "enc"},
read once into `TokenAxis` values when the hook point is built).
After construction `name_hook_points` gives every hook point its module
path as a stable name, e.g. `encoder.layers.2.attn.pattern`.

Captures and interventions are forward hooks registered for the length of
one call (`registered_hooks`) and always removed afterwards, so nothing
stays on the model between calls. A module may run many times in one run
(once per segment, per recurrent step, per decoding position): a run loop
says where it is with `call_scope(segment=s)`, and every capture records
that index beside each call (`current_scope`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

from inference.core.axes import TokenAxis
from inference.core.refusals import InputRefused

# A hook function sees the tensor flowing through the hook point and the
# hook point itself; it returns a replacement tensor or None to keep it.
HookFn = Callable[[torch.Tensor, "HookPoint"], torch.Tensor | None]

_scope: ContextVar[tuple[tuple[str, int], ...]] = ContextVar("hook_call_scope", default=())


class HookPoint(nn.Module):
    """Identity module that marks a named, documented tensor.

    dims:      the tensor's axes by name, space-separated, e.g. "batch head query key".
    doc:       what the tensor is, in words.
    positions: for axes that run over token positions, the token axis of
               the run they index, e.g. {"query": "enc.seq", "key": "enc"}
               (TokenAxis.parse: a bad one raises ValueError here); a Trace
               maps token axes to roles, so analyses never rely on position
               offsets.
    sizes:     the sizes of axes fixed by the model (e.g. {"head": 8}): an
               intervention may index these, checked before the model runs.
    """

    def __init__(
        self, dims: str, doc: str, positions: dict[str, str] | None = None, sizes: dict[str, int] | None = None
    ):
        super().__init__()
        self.dims = tuple(dims.split())
        self.doc = doc
        self.positions = {axis: TokenAxis.parse(text) for axis, text in (positions or {}).items()}
        self.sizes = dict(sizes or {})
        unknown = (set(self.positions) | set(self.sizes)) - set(self.dims)
        if unknown:
            raise ValueError(f"positions and sizes name axes {sorted(unknown)} that are not among dims {self.dims}")
        self.name = ""

    @property
    def shape(self) -> str:
        """The axes and the description in one line, e.g. "[batch head query key]  attention weights"."""
        return f"[{' '.join(self.dims)}]  {self.doc}"

    @property
    def active(self) -> bool:
        """True while some capture or intervention is registered here."""
        return bool(self._forward_hooks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def extra_repr(self) -> str:
        return f"{self.name!r}, {self.shape!r}"


HOOK_POINTS = "_hook_points_by_name"  # the attribute where a built model keeps its hook points


def name_hook_points(model: nn.Module) -> None:
    """Give every hook point its module path as its name; the model keeps them by name, so `hook_points` need
    not walk its modules again (a live route asks for them several times a request: 0.1 ms a walk)."""
    named = {}
    for path, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = path
            named[path] = module
    object.__setattr__(model, HOOK_POINTS, named)  # a plain attribute: not a submodule, not in the state dict


def hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """All hook points of a model by name, in module order: those `name_hook_points` named when the model was
    built, else (a part of a model) found among its modules."""
    named = model.__dict__.get(HOOK_POINTS)
    if named is not None:
        return dict(named)
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
            raise InputRefused(f"no hook point matches {pattern!r}; see hook_points(model) for the names")
        selected.extend(m for m in matches if m not in selected)
    return selected


@contextmanager
def call_scope(**index: int) -> Iterator[None]:
    """Mark the calls made inside the block with an index, e.g.
    `call_scope(segment=2)` or `call_scope(step=5)`; scopes nest."""
    token = _scope.set(_scope.get() + tuple(index.items()))
    try:
        yield
    finally:
        _scope.reset(token)


def current_scope() -> dict[str, int]:
    """The index the enclosing `call_scope` blocks give the current call."""
    return dict(_scope.get())


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
