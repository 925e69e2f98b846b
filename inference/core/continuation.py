"""How a language model of any family is traced: each text, framed as the family frames a prompt, is continued
greedily, then the prompt and its continuation are read in one teacher-forced pass with the hook points recorded.

The shared decoding loop runs the family's step: a family that keeps a key/value cache (the Hugging Face causal
LMs: `CachedNextToken`, a `NextTokenStep`) feeds each new token alone; otherwise the whole window is re-run per
new token (MemLens's own language model: small, short windows). The interventions' hooks are held around the whole
loop, so an edit changes the continuation as it changes the pass; every kind a causal LM takes (`scale` along a
fixed-size axis: heads, FF keys, or the whole tensor) acts on each position alone, so a cached decode continues
exactly as a re-run one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.axes import AxisKey
from inference.core.capabilities import FamilyConfig, config_of
from inference.core.decoding import GREEDY, GreedyChooser, generate, pad_batch, strip_after_eos
from inference.core.family import LoadedModel
from inference.core.interventions import Interventions
from inference.core.refusals import InputRefused
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import assembled_trace, recording, token_roles


class NextTokenStep(Protocol):
    def __call__(self, ids: torch.Tensor, /) -> torch.Tensor:  # [rows, t] the tokens so far -> [rows, vocab]
        """The next token's logits after every row's tokens so far."""
        ...


StepFactory = Callable[[], NextTokenStep]  # a fresh step (with an empty cache, where it keeps one) per continuation


def window_step(model: nn.Module) -> NextTokenStep:
    """The step without a cache: the whole window through `model` (`model(ids [rows, t])` -> [rows, t, vocab])."""
    return lambda ids: model(ids)[:, -1]


@torch.no_grad()
def greedy_continuation(
    model: nn.Module,
    prompt: list[int],
    max_new_tokens: int,
    interventions: Interventions | None = None,
    step: NextTokenStep | None = None,
) -> list[int]:
    """The greedy next tokens after `prompt`, stopping at EOS (left out) or where the context window is full;
    `step` scores the next token (default: the whole window through `model`)."""
    c = config_of(model)
    start = torch.tensor([prompt], dtype=torch.long, device=next(model.parameters()).device)  # [1, t]
    budget = max(0, min(max_new_tokens, c.max_positions - len(prompt)))
    with applied_interventions(model, interventions):
        tokens = generate(step or window_step(model), GreedyChooser(c.pad_id, c.eos_id), start, budget)
    return strip_after_eos(tokens[:, len(prompt) :].cpu(), c.eos_id)[0]


def stream_roles(
    rows: list[list[int]], prompts: list[list[int]], streams: list[list[int]], config: FamilyConfig
) -> list[list[Role]]:
    """TEXT (BOS, EOS: SPECIAL) over each prompt, GENERATED over its continuation, PAD after its stream. Where the
    pad id is also BOS or EOS (GPT-2), a position inside the stream is never padding."""
    roles = token_roles(rows, config, Role.TEXT)
    for row, prompt, stream in zip(roles, prompts, streams):
        for position, role in enumerate(row):
            if position >= len(stream):
                row[position] = Role.PAD
            elif position >= len(prompt):
                row[position] = Role.GENERATED
            elif role == Role.PAD:
                row[position] = Role.SPECIAL
    return roles


def continuation_trace(
    loaded: LoadedModel,
    model: nn.Module,
    request: TraceRequest,
    frame: Callable[[str], list[int]],
    axis: str,
    steps: StepFactory | None = None,
) -> Trace:
    """Continue each source text greedily (`max_new_tokens`, none for 0; each with a fresh step from `steps`, else
    the whole window per token), then record the hook points in one pass over the framed prompt + continuation, on
    one token axis; continuation positions have the role GENERATED.
    ValueError on a target (a language model reads one text), an empty text, or one longer than the window."""
    if request.targets is not None:
        raise InputRefused("a language model reads one text: pass it as the source, without a target")
    if not all(text.strip() for text in request.sources):
        raise InputRefused("empty text")
    config, tokenizer = config_of(model), loaded.tokenizer
    prompts = [frame(text) for text in request.sources]
    for prompt in prompts:
        if len(prompt) > config.max_positions:
            raise InputRefused(
                f"the text has {len(prompt) - 1} tokens; the model reads at most {config.max_positions - 1}"
            )
    continuations = [
        greedy_continuation(model, prompt, request.max_new_tokens, request.interventions, steps and steps())
        for prompt in prompts
    ]
    streams = [prompt + continuation for prompt, continuation in zip(prompts, continuations)]
    ids = pad_batch(streams, config.pad_id, loaded.device)  # [b, t]
    with recording(model, request.names, request.interventions) as (captures, memory_size):
        logits = model(ids)  # [b, t, vocab]
    rows = ids.tolist()
    key = AxisKey(axis)
    return assembled_trace(
        loaded,
        request,
        captures=captures,
        memory_size=memory_size,
        tokens={key: [tokenizer.display_tokens(row) for row in rows]},
        roles={key: stream_roles(rows, prompts, streams, config)},
        output_ids=[stream[1:] for stream in streams],
        outputs=[tokenizer.decode(continuation) for continuation in continuations],
        logits=logits,
        decoding=GREEDY if request.max_new_tokens else None,
    )
