"""What a traced run returns (`run_with_trace`, inference.core.tracing).

A `Trace` is a typed record of the run (`RunRecord`: model, family,
capabilities, config, interventions, decoding), a `Capture` per recorded
hook point holding every call of it with its index (segment, step,
decoding position) and the names of its axes, a display token and a role
for every position of every token axis, and the output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from inference.core.capabilities import Capability, FamilyConfig
from inference.core.decoding import Decoding
from inference.core.interventions import Interventions

# Roles of positions that hold memory rather than text; every other role
# except "pad" counts as sequence.
MEMORY_ROLES = frozenset({"mem", "read_mem", "write_mem", "wm"})


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
    positions: dict[str, str]  # axis -> the token axis it runs over, e.g. {"query": "enc.seq", "key": "enc"}
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


@dataclass
class Trace:
    run: RunRecord
    captures: dict[str, Capture]  # hook name -> every call of it
    # token axis ("enc", "dec", "tok"; "seg@segment=2" where each call has its own positions: indexed_axis)
    # -> display token / role per position, per example
    tokens: dict[str, list[list[str]]]
    roles: dict[str, list[list[str]]]
    sources: list[str]
    output_ids: list[list[int]]  # the output the logits score (given, or the model's own), per example
    outputs: list[str]  # detokenized output text (translation, continuation)
    logits: torch.Tensor  # [b, t, vocab] over the output positions
    decoded: bool  # True when the output is the model's own

    def tensor(self, name: str, **index: int) -> torch.Tensor:
        """The captured tensor of hook `name` at `index` (no index: its only call)."""
        return self.captures[name].at(**index)

    def axis_roles(self, axis: str, example: int, **index: int) -> list[str]:
        """Roles along a token axis; "enc.mem" / "enc.seq" select the memory /
        non-memory positions of "enc", in order. `index`: the call, for a
        token axis that differs from call to call (one segment's positions)."""
        return [role for _, role in self._positions(axis, example, index)]

    def axis_tokens(self, axis: str, example: int, **index: int) -> list[str]:
        return [token for token, _ in self._positions(axis, example, index)]

    def _positions(self, axis: str, example: int, index: dict[str, int]) -> list[tuple[str, str]]:
        base, _, part = axis.partition(".")
        key = indexed_axis(base, **index) if indexed_axis(base, **index) in self.roles else base
        pairs = list(zip(self.tokens[key][example], self.roles[key][example]))
        if part == "mem":
            return [(t, r) for t, r in pairs if r in MEMORY_ROLES]
        if part == "seq":
            return [(t, r) for t, r in pairs if r not in MEMORY_ROLES]
        return pairs


def indexed_axis(axis: str, **index: int) -> str:
    """The key of a token axis whose positions differ from call to call, e.g.
    indexed_axis("seg", segment=2) == "seg@segment=2"; without an index, the axis itself."""
    return axis + "".join(f"@{key}={value}" for key, value in index.items() if key != "call")


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
