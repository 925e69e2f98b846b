"""How a language model of any family is traced: each text, framed as the family frames a prompt, is continued
greedily, then the prompt and its continuation are read in one teacher-forced pass with the hook points recorded.

No key/value cache: the shared decoding loop re-runs the whole window per new token (the models read here are
small and their windows short), with the interventions' hooks held around the whole loop, so an edit changes the
continuation as it changes the pass.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.axes import AxisKey
from inference.core.capabilities import FamilyConfig, config_of
from inference.core.decoding import GREEDY, GreedyChooser, generate, pad_batch, strip_after_eos
from inference.core.interventions import Interventions
from inference.core.loaded_model import LoadedModel
from inference.core.trace import Role, Trace, TraceRequest
from inference.core.tracing import assembled_trace, recording, token_roles


@torch.no_grad()
def greedy_continuation(
    model: nn.Module, prompt: list[int], max_new_tokens: int, interventions: Interventions | None = None
) -> list[int]:
    """The greedy next tokens after `prompt` (`model(ids [1, t])` gives logits [1, t, vocab]), stopping at EOS
    (left out) or where the context window is full."""
    c = config_of(model)
    start = torch.tensor([prompt], dtype=torch.long, device=next(model.parameters()).device)  # [1, t]
    budget = max(0, min(max_new_tokens, c.max_positions - len(prompt)))
    with applied_interventions(model, interventions):
        tokens = generate(lambda ids: model(ids)[:, -1], GreedyChooser(c.pad_id, c.eos_id), start, budget)
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
    loaded: LoadedModel, model: nn.Module, request: TraceRequest, frame: Callable[[str], list[int]], axis: str
) -> Trace:
    """Continue each source text greedily (`max_new_tokens`, none for 0), then record the hook points in one pass
    over the framed prompt + continuation, on one token axis; continuation positions have the role GENERATED.
    ValueError on a target (a language model reads one text), an empty text, or one longer than the window."""
    if request.targets is not None:
        raise ValueError("a language model reads one text: pass it as the source, without a target")
    if not all(text.strip() for text in request.sources):
        raise ValueError("empty text")
    config, tokenizer = config_of(model), loaded.tokenizer
    prompts = [frame(text) for text in request.sources]
    for prompt in prompts:
        if len(prompt) > config.max_positions:
            raise ValueError(
                f"the text has {len(prompt) - 1} tokens; the model reads at most {config.max_positions - 1}"
            )
    continuations = [
        greedy_continuation(model, prompt, request.max_new_tokens, request.interventions) for prompt in prompts
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
