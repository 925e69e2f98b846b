"""The capture API: run a model on inputs and record its hook points.

`run_with_trace` asks the model's family to run it (`Family.trace`) and
returns a `Trace`: a typed record of the run (`RunRecord`: model, family,
capabilities, config, interventions, decoding), a `Capture` per recorded
hook point holding every call of it with its index (segment, step,
decoding position) and the names of its axes, a display token and a role
for every position of every token axis, and the output.

Captures are hooks registered for the one call and removed afterwards
(`recording`), so nothing stays on the model between calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from inference.core.checkpoint import LoadedModel
from inference.core.decoding import GREEDY, Decoding, pad_batch, strip_after_eos
from inference.core.family import Capability, FamilyConfig, capabilities_of, family_of
from inference.core.hooks import HookPoint, current_scope, hook_points, registered_hooks, select_hook_names
from inference.core.interventions import Interventions, applied_interventions

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


def run_with_trace(
    loaded: LoadedModel,
    sources: str | list[str],
    targets: str | list[str] | None = None,
    names: list[str] | None = None,
    interventions: Interventions | None = None,
    max_new_tokens: int = 128,
    seed: int = 0,
    decoding: Decoding = GREEDY,
) -> Trace:
    """Run teacher-forced on `targets`, or on the model's own output when no
    targets are given (decoded by `decoding`: greedy or beam search),
    recording the hook points `names` (exact names or glob patterns; None =
    all). `seed`: the sampling seed of a family that samples (others ignore
    it). Raises ValueError on input the model cannot take."""
    sources = [sources] if isinstance(sources, str) else list(sources)
    if not sources:
        raise ValueError("no source text given")
    if targets is not None:
        targets = [targets] if isinstance(targets, str) else list(targets)
        if len(targets) != len(sources):
            raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    if decoding.method != "greedy":
        if Capability.BEAM_SEARCH not in capabilities_of(loaded.config):
            raise ValueError(f"beam search does not apply to {loaded.name}: it chooses its output its own way")
        if targets is not None:
            raise ValueError("beam search applies to the model's own output: a given target is forced as it is")
    request = TraceRequest(sources, targets, names, interventions or Interventions(), max_new_tokens, seed, decoding)
    return family_of(loaded.config.family).trace(loaded, request)


def run_record(loaded: LoadedModel, request: TraceRequest, memory_size: int, decoding: Decoding | None) -> RunRecord:
    """The record of a run of `loaded` as `request` asked; `decoding` None where the output was given."""
    return RunRecord(
        model=loaded.name,
        family=loaded.config.family,
        capabilities=capabilities_of(loaded.config),
        config=loaded.config,
        interventions=request.interventions,
        memory_size=memory_size,
        decoding=decoding,
        seed=request.seed,
    )


@contextmanager
def recording(
    model: nn.Module, names: list[str] | None, interventions: Interventions
) -> Iterator[tuple[dict[str, Capture], int]]:
    """For one run: (hook name -> Capture, filled call by call as the model
    runs; the memory size in force). Interventions are registered first, so
    captures see their effect."""
    points = hook_points(model)
    captures = {name: _empty_capture(points[name]) for name in select_hook_names(model, names)}

    def capture(tensor: torch.Tensor, point: HookPoint) -> None:
        calls = captures[point.name].calls
        calls.append(Call({"call": len(calls), **current_scope()}, tensor.detach().cpu()))

    with (
        torch.no_grad(),
        applied_interventions(model, interventions) as memory_size,
        registered_hooks(model, [(name, capture) for name in captures]),
    ):
        yield captures, memory_size


def _empty_capture(point: HookPoint) -> Capture:
    return Capture(point.name, point.dims, point.positions, point.doc)


def encode_sources(loaded: LoadedModel, sources: list[str]) -> torch.Tensor:  # [b, n]
    """Source texts -> padded ids with EOS; raises ValueError on empty or overlong input."""
    config = loaded.config
    rows = loaded.tokenizer.encode_sources(sources)
    for ids in rows:
        if len(ids) == 1:
            raise ValueError("empty source text")
        if len(ids) > config.max_positions:
            raise ValueError(f"source has {len(ids) - 1} tokens; the model accepts at most {config.max_positions - 1}")
    return pad_batch(rows, config.pad_id, loaded.device)


def token_roles(ids: list[list[int]], config: FamilyConfig, content_role: str) -> list[list[str]]:
    """The role of every id: "pad", "special" (BOS, EOS) or `content_role` ("src", "tgt", ...)."""
    special = (config.bos_id, config.eos_id)
    return [["pad" if i == config.pad_id else "special" if i in special else content_role for i in row] for row in ids]


def own_or_given_output(
    loaded: LoadedModel, request: TraceRequest, src_ids: torch.Tensor
) -> tuple[list[list[int]], torch.Tensor]:
    """For a family whose model offers `greedy(src_ids, max_new_tokens) -> (tokens, logits)` and a teacher-forced
    `model(src_ids, tgt_in)`: (output ids without EOS, logits [b, t, vocab]) of its greedy output, or of the
    request's targets teacher-forced. Run it inside `recording`, so the hooks see the pass."""
    model, config = loaded.model, loaded.config
    if request.targets is None:
        tokens, logits = model.greedy(src_ids, request.max_new_tokens)
        return strip_after_eos(tokens.cpu(), config.eos_id), logits
    output_ids = loaded.tokenizer.encode_batch(request.targets)
    tgt_in = pad_batch([[config.bos_id] + ids for ids in output_ids], config.pad_id, loaded.device)  # [b, t]
    return output_ids, model(src_ids, tgt_in)
