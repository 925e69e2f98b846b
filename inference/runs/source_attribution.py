"""Where a model looks in its source, by gradients rather than by attention:
Captum's integrated gradients of every token of the model's own greedy
output onto the embedded source tokens, for any family whose capabilities
include SOURCE_ATTRIBUTION (the family names its source embedding; the
model computes teacher-forced logits as model(src_ids, tgt_in)).

The target of output position p is the logit of the token the model chose
there, teacher-forced on its output before p (the same logits the greedy run
computed). The path runs from zero vectors (no source) to the embedded
source; every position is one row of one batched run, which Captum evaluates
in chunks of `internal_batch_size`, so memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from inference.core.family import family_of
from inference.core.hook_names import LOGITS
from inference.core.loaded_model import LoadedModel
from inference.core.tracing import encode_sources, run_with_trace


@dataclass(frozen=True)
class SourceAttribution:
    source_tokens: list[str]  # the source as the encoder reads it, EOS included
    output_tokens: list[str]  # the model's greedy output, with its EOS unless it was cut at max_new_tokens
    integrated_gradients: list[list[float]]  # [outputs, sources]: signed, summed over the embedding's dimensions
    convergence_delta: float  # the largest |sum of a row's attributions - (f(source) - f(zero source))|


@contextmanager
def embedded_as(module: nn.Module, embedded: torch.Tensor) -> Iterator[None]:
    """While open, `module` returns `embedded` in place of its own output."""
    handle = module.register_forward_hook(lambda _module, _args, _output: embedded)
    try:
        yield
    finally:
        handle.remove()


def source_attribution(
    loaded: LoadedModel, text: str, max_new_tokens: int, n_steps: int = 32, internal_batch_size: int = 32
) -> SourceAttribution:
    """Integrated gradients of each of the model's output tokens onto each source token."""
    from captum.attr import IntegratedGradients  # imported when used: 0.7 s off the server's start

    model, config, tokenizer = loaded.model, loaded.config, loaded.tokenizer
    embedding = family_of(config.family).source_embedding(model)
    src_ids = encode_sources(loaded, [text])  # [1, n]
    greedy = run_with_trace(loaded, text, names=[LOGITS], max_new_tokens=max_new_tokens)
    output_ids = greedy.output_ids[0]
    after = len(output_ids)  # the position after the output: EOS where the model ended it there, else it was cut
    ended = after < greedy.logits.shape[1] and int(greedy.logits[0, after].argmax()) == config.eos_id
    targets = output_ids + [config.eos_id] if ended else output_ids  # what each decoder position chose
    tgt_in = torch.tensor([[config.bos_id] + targets[:-1]], device=src_ids.device)  # [1, t]
    with torch.no_grad():
        source = embedding(src_ids)  # [1, n, e]
    rows = len(targets)
    positions = torch.arange(rows, device=src_ids.device)  # [t]: row p explains output position p
    chosen = torch.tensor(targets, device=src_ids.device)  # [t]

    def chosen_logit(embedded: torch.Tensor, position: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        k = embedded.shape[0]  # [k, n, e] -> [k]
        with embedded_as(embedding, embedded):
            logits = model(src_ids.expand(k, -1), tgt_in.expand(k, -1))  # [k, t, vocab]
        return logits[torch.arange(k), position, token]

    inputs = source.expand(rows, -1, -1).contiguous()  # [t, n, e]
    attributions, delta = IntegratedGradients(chosen_logit).attribute(
        inputs,
        baselines=torch.zeros_like(inputs),
        additional_forward_args=(positions, chosen),
        n_steps=n_steps,
        internal_batch_size=internal_batch_size,
        return_convergence_delta=True,
    )  # [t, n, e], [t]
    return SourceAttribution(
        source_tokens=tokenizer.display_tokens(src_ids[0].tolist()),
        output_tokens=tokenizer.display_tokens(targets),
        integrated_gradients=attributions.sum(-1).tolist(),
        convergence_delta=float(delta.abs().max()),
    )
