"""The capture API: run a model on inputs and record its hook points.

`run_with_trace` returns a `Trace` holding detached CPU tensors by hook
name, a display token and a role for every position of every axis, the
output, and the configuration it ran with. Captures are hooks registered for
the one call and removed afterwards.

A translation model without targets is traced on its own output, decoded
as `decoding` says (greedy by default, or beam search: `Decoding`), under
the same interventions; the trace's config records the decoding.

A working-memory model is traced on its own generation (it chooses its
memory while it writes, so a given reference cannot stand in): memory and
translation are generated with a seed, every step's decision is kept
(`Trace.choices`), then one teacher-forced pass over the generated stream
records the hook points. On the "dec" axis memory tokens have the role "wm".

A language model is traced on [EOS] + the text + its greedy continuation
(max_new_tokens, none for 0), one axis "tok"; continuation positions have
the role "generated". `sources` hold the texts, `translations` the
continuations.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from inference.checkpoint import LoadedModel
from inference.decoding import GREEDY, Decoding, decode, pad_batch, strip_after_eos
from inference.hooks import HookPoint, hook_points, registered_hooks, select_hook_names
from inference.interventions import Interventions, applied_interventions
from inference.lm_decoding import greedy_continuation, prompt_ids
from inference.models.language_model import AXIS, LanguageModel
from inference.models.working_memory import TARGET_TYPE, WorkingMemoryTransformer
from inference.wm_decoding import wm_generate

# Roles of positions that hold memory rather than text; every other role
# except "pad" counts as sequence.
MEMORY_ROLES = frozenset({"mem", "read_mem", "write_mem", "wm"})


@dataclass
class Trace:
    tensors: dict[str, torch.Tensor]  # hook name -> detached CPU tensor, shapes as declared by the hook point
    axes: dict[str, tuple[str, str] | None]  # hook name -> (query axis, key axis) of attention-shaped tensors
    tokens: dict[str, list[list[str]]]  # axis ("enc", "dec") -> display token per position, per example
    roles: dict[str, list[list[str]]]  # axis -> role per position, per example
    sources: list[str]
    target_ids: list[
        list[int]
    ]  # the target the decoder was forced on (given or the model's own output; working memory: the stream)
    translations: list[str]  # detokenized target text
    logits: torch.Tensor  # [b, t, vocab] teacher-forced logits on target_ids
    config: dict  # model name, model config, interventions, memory size used
    decoded: bool  # True when the target is the model's own output
    hook_shapes: dict[str, str] = field(default_factory=dict)  # hook name -> declared shape in words
    choices: torch.Tensor | None = None  # working memory: [b, steps, 7] decoder.wm.choice records (CHOICE_COLUMNS)

    def axis_roles(self, axis: str, example: int) -> list[str]:
        """Roles along an axis; "enc.mem" / "enc.seq" select the memory /
        non-memory positions of "enc", in order."""
        base, _, part = axis.partition(".")
        roles = self.roles[base][example]
        if part == "mem":
            return [r for r in roles if r in MEMORY_ROLES]
        if part == "seq":
            return [r for r in roles if r not in MEMORY_ROLES]
        return roles

    def axis_tokens(self, axis: str, example: int) -> list[str]:
        base, _, part = axis.partition(".")
        pairs = list(zip(self.tokens[base][example], self.roles[base][example]))
        if part == "mem":
            return [t for t, r in pairs if r in MEMORY_ROLES]
        if part == "seq":
            return [t for t, r in pairs if r not in MEMORY_ROLES]
        return [t for t, _ in pairs]


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
    all). `seed`: the working memory's sampling seed (other models ignore
    it). Beam search applies to the Memory Transformer families only; asked
    of another model, or together with targets, it raises ValueError."""
    model, tokenizer, config = loaded.model, loaded.tokenizer, loaded.config
    sources = [sources] if isinstance(sources, str) else list(sources)
    if not sources:
        raise ValueError("no source text given")
    interventions = interventions or Interventions()
    if decoding.method != "greedy":
        _check_beam_applies(model, targets)
    if isinstance(model, LanguageModel):
        if targets is not None:
            raise ValueError("a language model reads one text: pass it as the source, without a target")
        return _trace_language_model(loaded, sources, names, interventions, max_new_tokens)
    src_ids = encode_sources(loaded, sources)  # [b, n]
    if isinstance(model, WorkingMemoryTransformer):
        if targets is not None:
            raise ValueError(
                "a working-memory model is traced on its own output: it chooses its memory while it writes, so leave the target out"
            )
        return _trace_working_memory(loaded, sources, src_ids, names, interventions, max_new_tokens, seed)
    if targets is None:
        generated = decode(model, src_ids, decoding, interventions, max_new_tokens)
        target_ids = strip_after_eos(generated.cpu(), config.eos_id)
    else:
        targets = [targets] if isinstance(targets, str) else list(targets)
        if len(targets) != len(sources):
            raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
        target_ids = tokenizer.encode_batch(targets)
        if max(len(ids) for ids in target_ids) + 1 > config.max_positions:
            raise ValueError(f"a target is longer than the model's {config.max_positions - 1} tokens")
    tgt_in = pad_batch([[config.bos_id] + ids for ids in target_ids], config.pad_id, loaded.device)  # [b, t]

    selected = select_hook_names(model, names)
    points = hook_points(model)
    with _captured(model, selected, interventions) as (captured, memory_size):
        logits = model(src_ids, tgt_in, memory_size)  # [b, t, vocab]

    roles = model.position_roles(src_ids.cpu(), tgt_in.cpu(), memory_size)
    memory_tokens = [f"[mem{j}]" for j in range(memory_size)]
    tokens = {
        "enc": [memory_tokens + tokenizer.display_tokens(row) for row in src_ids.tolist()],
        "dec": [tokenizer.display_tokens(row) for row in tgt_in.tolist()],
    }
    return Trace(
        tensors=captured,
        axes={name: points[name].axes for name in selected},
        tokens=tokens,
        roles=roles,
        sources=sources,
        target_ids=target_ids,
        translations=[tokenizer.decode(ids) for ids in target_ids],
        logits=logits.detach().cpu(),
        config={
            "model": loaded.name,
            **asdict(config),
            "interventions": interventions.model_dump(),
            "run_memory_size": memory_size,
            "decoding": decoding.model_dump() if targets is None else None,  # None: forced on the given targets
        },
        decoded=targets is None,
        hook_shapes={name: points[name].shape for name in selected},
    )


def _check_beam_applies(model: nn.Module, targets: str | list[str] | None) -> None:
    """Beam search needs a model that decodes its own translation token by token; raises ValueError saying why not."""
    reason = None
    if isinstance(model, WorkingMemoryTransformer):
        reason = "beam search does not apply to a working-memory model: it samples its memory while it writes, so it decodes greedily with a seed"
    elif isinstance(model, LanguageModel):
        reason = "beam search does not apply to the language model: its continuation is greedy"
    elif targets is not None:
        reason = "beam search applies to the model's own output: a given target is forced as it is, so leave the decoding out"
    if reason:
        raise ValueError(reason)


@contextmanager
def _captured(
    model: nn.Module, names: list[str], interventions: Interventions
) -> Iterator[tuple[dict[str, torch.Tensor], int]]:
    """For one run: (name -> captured tensor, filled as the model runs; the memory size in force)."""
    captured: dict[str, torch.Tensor] = {}

    def capture(tensor: torch.Tensor, point: HookPoint) -> None:
        captured[point.name] = tensor.detach().cpu()

    with (
        torch.no_grad(),
        applied_interventions(model, interventions) as memory_size,
        registered_hooks(model, [(name, capture) for name in names]),
    ):
        yield captured, memory_size


def _trace_working_memory(
    loaded: LoadedModel,
    sources: list[str],
    src_ids: torch.Tensor,
    names: list[str] | None,
    interventions: Interventions,
    max_new_tokens: int,
    seed: int,
) -> Trace:
    """Generate memory and translation, then record the hook points in one
    teacher-forced pass over the generated stream (BOS + elements before
    the final EOS, as a decoder input)."""
    model, tokenizer, config = loaded.model, loaded.tokenizer, loaded.config
    generation = wm_generate(model, src_ids, interventions, seed=seed, max_new_tokens=max_new_tokens)
    streams = [
        example.ids[:-1] if example.ids[-1:] == [config.eos_id] else example.ids for example in generation.examples
    ]
    ids = pad_batch([[config.bos_id] + stream for stream in streams], config.pad_id, loaded.device)  # [b, t]
    types = pad_batch(
        [[TARGET_TYPE] + example.types[: len(stream)] for stream, example in zip(streams, generation.examples)],
        TARGET_TYPE,
        loaded.device,
    )
    key_mask = pad_batch([[1] * (1 + len(stream)) for stream in streams], 0, loaded.device).bool()  # [b, t]
    selected = select_hook_names(model, names)
    points = hook_points(model)
    with _captured(model, selected, interventions) as (captured, memory_size):
        logits, _ = model(src_ids, ids, types, key_mask)  # [b, t, vocab]
    return Trace(
        tensors=captured,
        axes={name: points[name].axes for name in selected},
        tokens={
            "enc": [tokenizer.display_tokens(row) for row in src_ids.tolist()],
            "dec": [tokenizer.display_tokens(row) for row in ids.tolist()],
        },
        roles=model.position_roles(src_ids.cpu(), ids.cpu(), types.cpu(), key_mask.cpu()),
        sources=sources,
        target_ids=streams,
        translations=[tokenizer.decode(example.translation) for example in generation.examples],
        logits=logits.detach().cpu(),
        config={
            "model": loaded.name,
            **asdict(config),
            "interventions": interventions.model_dump(),
            "run_memory_size": memory_size,
            "seed": seed,
            "decoding": GREEDY.model_dump(),  # target tokens greedy; memory sampled with the seed
        },
        decoded=True,
        hook_shapes={name: points[name].shape for name in selected},
        choices=generation.choices,
    )


def _trace_language_model(
    loaded: LoadedModel, texts: list[str], names: list[str] | None, interventions: Interventions, max_new_tokens: int
) -> Trace:
    """Continue each text greedily, then record the hook points in one pass
    over [EOS] + text + continuation."""
    model, tokenizer, config = loaded.model, loaded.tokenizer, loaded.config
    if not all(text.strip() for text in texts):
        raise ValueError("empty text")
    prompts = [prompt_ids(tokenizer, text) for text in texts]
    for prompt in prompts:
        if len(prompt) > config.max_positions:
            raise ValueError(
                f"the text has {len(prompt) - 1} tokens; the model reads at most {config.max_positions - 1}"
            )
    continuations = [
        greedy_continuation(model, prompt, max_new_tokens, interventions) if max_new_tokens else []
        for prompt in prompts
    ]
    streams = [prompt + continuation for prompt, continuation in zip(prompts, continuations)]
    ids = pad_batch(streams, config.pad_id, loaded.device)  # [b, t]
    selected = select_hook_names(model, names)
    points = hook_points(model)
    with _captured(model, selected, interventions) as (captured, memory_size):
        logits = model(ids)  # [b, t, vocab]
    roles = model.position_roles(ids.cpu())
    for row, prompt in zip(roles[AXIS], prompts):
        row[len(prompt) :] = ["generated" if role != "pad" else role for role in row[len(prompt) :]]
    return Trace(
        tensors=captured,
        axes={name: points[name].axes for name in selected},
        tokens={AXIS: [tokenizer.display_tokens(row) for row in ids.tolist()]},
        roles=roles,
        sources=texts,
        target_ids=[stream[1:] for stream in streams],
        translations=[tokenizer.decode(continuation) for continuation in continuations],
        logits=logits.detach().cpu(),
        config={
            "model": loaded.name,
            **asdict(config),
            "interventions": interventions.model_dump(),
            "run_memory_size": memory_size,
            "decoding": GREEDY.model_dump() if max_new_tokens else None,
        },
        decoded=max_new_tokens > 0,
        hook_shapes={name: points[name].shape for name in selected},
    )
