"""What a traced run returns (`run_with_trace`, inference.core.tracing).

A `Trace` is a typed record of the run (`RunRecord`: model, family,
capabilities, config, interventions, decoding), a `Capture` per recorded
hook point holding every call of it with its index (segment, step,
decoding position) and the token axes its axes run over, a display token
and a `Role` for every position of every token axis, and the output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

import torch

from inference.core.axes import AxisKey, AxisPart, AxisRole, TokenAxis
from inference.core.capabilities import Capability, FamilyConfig
from inference.core.decoding import Decoding
from inference.core.interventions import Interventions

T = TypeVar("T")


class Role(StrEnum):
    """What a position of a token axis holds. A StrEnum, so a role equals the word the app's templates and
    JSON show (Role.MEM == "mem")."""

    PAD = "pad"
    SPECIAL = "special"  # BOS, EOS
    SRC = "src"  # a source token
    TGT = "tgt"  # a target token
    TEXT = "text"  # a language model's text
    GENERATED = "generated"  # a language model's continuation
    TOK = "tok"  # a segment-recurrent model's text
    CACHE = "cache"  # an earlier segment's token that a segment attends to
    MEM = "mem"  # a memory slot (a state slot)
    READ_MEM = "read_mem"  # memory read at a segment's start
    WRITE_MEM = "write_mem"  # memory written at a segment's end
    WM = "wm"  # a working-memory token

    def __repr__(self) -> str:  # as a session prints it: Role.MEM
        return f"Role.{self.name}"


# Roles of positions that hold memory rather than text; every other role
# except PAD counts as sequence.
MEMORY_ROLES = frozenset({Role.MEM, Role.READ_MEM, Role.WRITE_MEM, Role.WM})


@dataclass(frozen=True)
class Call:
    """One call of a hook point: where in the run it happened and what passed."""

    index: dict[str, int]  # {"call": n} plus the run loop's scope, e.g. {"call": 3, "segment": 3}
    tensor: torch.Tensor  # detached CPU tensor with the hook point's dims


@dataclass
class Capture:
    """Every call of one hook point in one run."""

    name: str
    dims: tuple[str, ...]  # the axes of one call's tensor, e.g. ("batch", "head", "query", "key")
    positions: dict[str, TokenAxis]  # axis -> the token axis it runs over, e.g. {"query": "enc.seq", "key": "enc"}
    doc: str
    calls: list[Call] = field(default_factory=list)

    @property
    def index_names(self) -> tuple[str, ...]:
        """The scope keys that index the calls (e.g. ("segment",)), or ("call",) when the run set none."""
        keys = tuple(key for key in (self.calls[0].index if self.calls else {}) if key != "call")
        return keys or ("call",)

    def at(self, **index: int) -> torch.Tensor:
        """The tensor of the one call matching `index` (no index: the only call)."""
        found = [call for call in self.calls if all(call.index.get(key) == value for key, value in index.items())]
        if len(found) != 1:
            where = ", ".join(f"{key}={value}" for key, value in index.items()) or "no index"
            raise LookupError(f"{self.name}: {len(found)} calls match {where}; it has {len(self.calls)} calls")
        return found[0].tensor

    def index_values(self, key: str) -> list[int]:
        """The values `key` takes over the calls, in call order, without repeats."""
        return list(dict.fromkeys(call.index[key] for call in self.calls if key in call.index))

    def stacked(self) -> tuple[torch.Tensor, tuple[str, ...]]:
        """All calls stacked on a leading axis named by their index: (tensor, axis names),
        e.g. ([segment, batch, head, query, key], ("segment", "batch", "head", "query", "key"))."""
        names = self.index_names
        if len(names) != 1:
            raise ValueError(f"{self.name} is indexed by {names}; slice it with at(...)")
        shapes = {tuple(call.tensor.shape) for call in self.calls}
        if len(shapes) != 1:
            raise ValueError(f"{self.name}: its calls have different shapes {sorted(shapes)}; slice it with at(...)")
        return torch.stack([call.tensor for call in self.calls]), (names[0], *self.dims)


@dataclass(frozen=True)
class RunRecord:
    """What ran: the model, what it can do, and every setting of the run."""

    model: str  # checkpoint name
    family: str  # the config's family value
    capabilities: frozenset[Capability]
    config: FamilyConfig  # the model's config dataclass
    interventions: Interventions
    memory_size: int  # memory in force during the run (0 where the model has none)
    decoding: Decoding | None  # how the output was chosen; None where it was given (teacher forcing)
    seed: int | None = None  # sampling seed, where the family samples (working memory)
    token_axes: Mapping[str, AxisRole] = field(default_factory=dict)  # the family's token axes and their roles


@dataclass
class Trace:
    run: RunRecord
    captures: dict[str, Capture]  # hook name -> every call of it
    # token axis (an AxisKey: "enc", "dec", "tok"; "seg@segment=2" for one call of an axis whose positions differ
    # from call to call) -> display token / role per position, per example
    tokens: dict[str, list[list[str]]]
    roles: dict[str, list[list[Role]]]
    sources: list[str]
    output_ids: list[list[int]]  # the output the logits score (given, or the model's own), per example
    outputs: list[str]  # detokenized output text (translation, continuation)
    logits: torch.Tensor  # [b, t, vocab] over the output positions
    # token axis whose positions differ from call to call -> the call-scope key that tells its calls apart,
    # e.g. {"seg": "segment", "ctx": "segment"}; every other axis is the same in every call
    call_axes: dict[str, str] = field(default_factory=dict)
    # what analyses read from this trace, by name, computed once (`derived`): the views of a cached plain run
    _derived: dict[str, object] = field(default_factory=dict, init=False, repr=False, compare=False)

    def derived(self, name: str, read: Callable[[Trace], T]) -> T:
        """read(self), computed on first use and kept with the trace: a pure analysis of a run the gateway keeps
        (the plain run a lesion is shown against) is then read once, not on every request. `read` must be a
        function of the trace alone (its other settings bound into `name`) whose result nobody changes."""
        if name not in self._derived:
            self._derived[name] = read(self)
        return self._derived[name]  # type: ignore[return-value]

    @property
    def decoded(self) -> bool:
        """True when the output is the model's own."""
        return self.run.decoding is not None

    def axis_with(self, role: AxisRole) -> str:
        """The name of the token axis that has `role` (as the model's family declares it); KeyError otherwise."""
        for name, declared in self.run.token_axes.items():
            if declared is role:
                return name
        raise KeyError(f"a {self.run.family} trace has no {role} axis; its axes are {dict(self.run.token_axes)}")

    def tensor(self, name: str, **index: int) -> torch.Tensor:
        """The captured tensor of hook `name` at `index` (no index: its only call)."""
        return self.captures[name].at(**index)

    def axis_roles(self, axis: TokenAxis, example: int, **index: int) -> list[Role]:
        """Roles along a token axis, or along its memory / sequence positions (its part), in order.
        `index`: the call, for an axis whose positions differ from call to call (axis_key)."""
        return [role for _, role in self._positions(axis, example, index)]

    def axis_tokens(self, axis: TokenAxis, example: int, **index: int) -> list[str]:
        return [token for token, _ in self._positions(axis, example, index)]

    def axis_key(self, name: str, **index: int) -> AxisKey:
        """The key of token axis `name` in `tokens` and `roles`, in the call `index` (a capture's call index;
        its running count `call` never tells positions apart). An axis whose positions differ from call to
        call must be asked with its call-scope key, e.g. segment=2, and no other; any other axis without one.
        Raises LookupError naming the axis otherwise."""
        scope = {key: value for key, value in index.items() if key != "call"}
        scope_key = self.call_axes.get(name)
        if scope_key is None and scope:
            raise LookupError(f"token axis {name!r} is the same in every call: ask it without an index ({scope} given)")
        if scope_key is not None and scope.keys() != {scope_key}:
            asked = scope or "no index"
            raise LookupError(
                f"token axis {name!r} differs from call to call: ask it with {scope_key}=... ({asked} given)"
            )
        key = AxisKey(name, **scope)
        if key not in self.roles:
            raise LookupError(f"the trace has no token axis {key}; it has {', '.join(self.roles)}")
        return key

    def _positions(self, axis: TokenAxis, example: int, index: dict[str, int]) -> list[tuple[str, Role]]:
        key = self.axis_key(axis.name, **index)
        pairs = list(zip(self.tokens[key][example], self.roles[key][example]))
        if axis.part is AxisPart.MEMORY:
            return [(t, r) for t, r in pairs if r in MEMORY_ROLES]
        if axis.part is AxisPart.SEQUENCE:
            return [(t, r) for t, r in pairs if r not in MEMORY_ROLES]
        return pairs


@dataclass(frozen=True)
class TraceRequest:
    """One traced run, as `run_with_trace` normalised it."""

    sources: list[str]  # at least one
    targets: list[str] | None  # one per source, or None: the model's own output
    names: list[str] | None  # hook names or glob patterns; None = all
    interventions: Interventions
    max_new_tokens: int
    seed: int
    decoding: Decoding

    @property
    def output_decoding(self) -> Decoding | None:
        """How the output is chosen: the request's decoding, or None where targets are given (teacher forcing)."""
        return self.decoding if self.targets is None else None
