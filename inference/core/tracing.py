"""Running a model while recording its hook points: `run_with_trace` asks the model's family to run it
(`Family.trace`) and returns a `Trace` (inference.core.trace); `recording` and the helpers below are what
the families' trace methods are built from, and `assembled_trace` is how each of them ends: it takes what is
the family's own (captures, token axes, output, logits) and fills in the rest.

Captures are hooks registered for the one call and removed afterwards
(`recording`), so nothing stays on the model between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

import torch
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.axes import AxisKey
from inference.core.capabilities import Capability, FamilyConfig
from inference.core.decoding import GREEDY, MAX_NEW_TOKENS, Decoding, pad_batch, strip_after_eos
from inference.core.family import LoadedModel, capabilities_of
from inference.core.hooks import HookPoint, current_scope, hook_points, registered_hooks, select_hook_names
from inference.core.interventions import Interventions
from inference.core.refusals import InputRefused
from inference.core.trace import Call, Capture, Role, RunRecord, Trace, TraceRequest

ModelT = TypeVar("ModelT", bound=nn.Module)


def run_with_trace(
    loaded: LoadedModel,
    sources: str | list[str],
    targets: str | list[str] | None = None,
    names: list[str] | None = None,
    interventions: Interventions | None = None,
    max_new_tokens: int = MAX_NEW_TOKENS,
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
        raise InputRefused("no source text given")
    if targets is not None:
        targets = [targets] if isinstance(targets, str) else list(targets)
        if len(targets) != len(sources):
            raise InputRefused(f"{len(sources)} sources but {len(targets)} targets")
    if decoding.method != "greedy":
        if Capability.BEAM_SEARCH not in capabilities_of(loaded.config):
            raise InputRefused(f"beam search does not apply to {loaded.name}: it chooses its output its own way")
        if targets is not None:
            raise InputRefused("beam search applies to the model's own output: a given target is forced as it is")
    request = TraceRequest(sources, targets, names, interventions or Interventions(), max_new_tokens, seed, decoding)
    return loaded.family.trace(loaded, request)


def assembled_trace(
    loaded: LoadedModel,
    request: TraceRequest,
    *,
    captures: dict[str, Capture],
    memory_size: int,
    tokens: dict[AxisKey, list[list[str]]],
    roles: dict[AxisKey, list[list[Role]]],
    output_ids: list[list[int]],
    logits: torch.Tensor,  # [b, t, vocab]
    decoding: Decoding | None,
    outputs: list[str] | None = None,
) -> Trace:
    """The Trace of a run of `loaded` as `request` asked, from what the family's run gave: the captures and the
    memory size in force (`recording`), a display token and a role for every position of every token axis,
    per example (an axis keyed with a call, AxisKey("seg", segment=2), differs from call to call), the output
    ids the logits score, how the output was chosen (None where it was given), and the output text where it
    is not the output ids detokenized. Raises RuntimeError (a family's bug, not the input's) where the axes'
    tokens and roles do not match, or where it has an axis its family does not declare (`Family.token_axes`)."""
    for key in tokens.keys() | roles.keys():
        token_lengths = [len(row) for row in tokens.get(key, [])]
        role_lengths = [len(row) for row in roles.get(key, [])]
        if token_lengths != role_lengths or len(role_lengths) != len(request.sources):
            raise RuntimeError(f"token axis {key}: its tokens and roles do not match, one row per source")
    call_axes = _call_axes(tokens)
    declared = loaded.family.token_axes
    undeclared = sorted({key.name for key in tokens.keys() | roles.keys()} - set(declared))
    if undeclared:
        raise RuntimeError(f"the {loaded.family.name} family's trace has token axes it does not declare: {undeclared}")
    run = RunRecord(
        model=loaded.name,
        family=loaded.config.family,
        capabilities=capabilities_of(loaded.config),
        config=loaded.config,
        interventions=request.interventions,
        memory_size=memory_size,
        decoding=decoding,
        seed=request.seed,
        token_axes=declared,
    )
    return Trace(
        run=run,
        captures=captures,
        tokens={key: rows for key, rows in tokens.items()},
        roles={key: rows for key, rows in roles.items()},
        sources=request.sources,
        output_ids=output_ids,
        outputs=[loaded.tokenizer.decode(ids) for ids in output_ids] if outputs is None else outputs,
        logits=logits.detach().cpu(),
        call_axes=call_axes,
    )


def _call_axes(keys: Iterable[AxisKey]) -> dict[str, str]:
    """Token axis -> the call-scope key its keys name, for the axes keyed with a call (Trace.call_axes);
    RuntimeError where an axis is keyed both with and without a call, or with two scope keys."""
    scopes: dict[str, set[str | None]] = {}
    for key in keys:
        scopes.setdefault(key.name, set()).add(key.call[0] if key.call else None)
    mixed = sorted(name for name, found in scopes.items() if len(found) > 1)
    if mixed:
        raise RuntimeError(f"token axes {mixed} are keyed with more than one call scope (or with one and without)")
    return {name: scope for name, (scope,) in scopes.items() if scope is not None}


def model_as(loaded: LoadedModel, model_type: type[ModelT]) -> ModelT:
    """The loaded model as the class its family builds; TypeError where it is another."""
    if not isinstance(loaded.model, model_type):
        raise TypeError(f"{loaded.name} is a {type(loaded.model).__name__}, not a {model_type.__name__}")
    return loaded.model


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
            raise InputRefused("empty source text")
        if len(ids) > config.max_positions:
            raise InputRefused(
                f"source has {len(ids) - 1} tokens; the model accepts at most {config.max_positions - 1}"
            )
    return pad_batch(rows, config.pad_id, loaded.device)


def token_roles(ids: list[list[int]], config: FamilyConfig, content_role: Role) -> list[list[Role]]:
    """The role of every id: PAD, SPECIAL (BOS, EOS) or `content_role` (SRC, TGT, ...)."""
    special = (config.bos_id, config.eos_id)
    return [
        [Role.PAD if i == config.pad_id else Role.SPECIAL if i in special else content_role for i in row] for row in ids
    ]


def own_or_given_targets(
    loaded: LoadedModel, request: TraceRequest, decode: Callable[[], torch.Tensor]
) -> tuple[list[list[int]], torch.Tensor]:
    """(output ids without EOS, tgt_in [b, t] = BOS + output, padded) of the model's own output, `decode()`'s
    generated ids [b, steps] (by the request's decoding), or of the request's targets; ValueError for a target
    longer than the model's positions."""
    config = loaded.config
    if request.targets is None:
        output_ids = strip_after_eos(decode().cpu(), config.eos_id)
    else:
        output_ids = loaded.tokenizer.encode_batch(request.targets)
        if max(len(ids) for ids in output_ids) + 1 > config.max_positions:
            raise InputRefused(f"a target is longer than the model's {config.max_positions - 1} tokens")
    tgt_in = pad_batch([[config.bos_id] + ids for ids in output_ids], config.pad_id, loaded.device)  # [b, t]
    return output_ids, tgt_in


class GreedyOrForced(Protocol):
    """A model that decodes greedily and runs teacher-forced (own_or_given_output)."""

    def greedy(self, src_ids: torch.Tensor, max_new_tokens: int) -> tuple[torch.Tensor, torch.Tensor]: ...

    def __call__(self, src_ids: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor: ...


def own_or_given_output(
    loaded: LoadedModel, model: GreedyOrForced, request: TraceRequest, src_ids: torch.Tensor
) -> tuple[list[list[int]], torch.Tensor]:
    """For a family whose model (`loaded`'s) offers `greedy(src_ids, max_new_tokens) -> (tokens, logits)` and a
    teacher-forced `model(src_ids, tgt_in)`: (output ids without EOS, logits [b, t, vocab]) of its greedy output,
    or of the request's targets teacher-forced. Run it inside `recording`, so the hooks see the pass."""
    config = loaded.config
    if request.targets is None:
        tokens, logits = model.greedy(src_ids, request.max_new_tokens)
        return strip_after_eos(tokens.cpu(), config.eos_id), logits
    output_ids = loaded.tokenizer.encode_batch(request.targets)
    tgt_in = pad_batch([[config.bos_id] + ids for ids in output_ids], config.pad_id, loaded.device)  # [b, t]
    return output_ids, model(src_ids, tgt_in)
