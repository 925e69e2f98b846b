"""Where a model looks in its source, by gradients rather than by attention:
integrated gradients of every token of the model's own greedy output onto the
embedded source tokens, for any family whose capabilities include
SOURCE_ATTRIBUTION (the family names its source embedding; the model computes
teacher-forced logits as model(src_ids, tgt_in)).

The target of output position p is the logit of the token the model chose
there, teacher-forced on its output before p (the same logits the greedy run
computed). The path runs from zero vectors (no source) to the embedded source,
its points and weights Gauss-Legendre's, as Captum's IntegratedGradients
chooses them by default (a test holds the two equal).

Every output position follows the same path, so the model runs once per path
point for all of them: one forward over a chunk of `internal_batch_size` path
points, then one backward per output over the chunk. Captum's
own call runs the whole model once per (output, point) pair, which costs as
many forwards again as there are outputs (benchmarks/latency.py times both).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from inference.analyses.source_attribution import SourceAttribution
from inference.core.family import LoadedModel, family_of_config
from inference.core.hook_names import LOGITS
from inference.core.tracing import encode_sources, run_with_trace


@contextmanager
def embedded_as(module: nn.Module, embedded: torch.Tensor) -> Iterator[None]:
    """While open, `module` returns `embedded` in place of its own output."""
    handle = module.register_forward_hook(lambda _module, _args, _output: embedded)
    try:
        yield
    finally:
        handle.remove()


def gauss_legendre(n_steps: int) -> tuple[list[float], list[float]]:
    """(points in [0, 1], their weights, summing to 1) of the n-point Gauss-Legendre rule on [0, 1]."""
    nodes, weights = np.polynomial.legendre.leggauss(n_steps)
    return (0.5 * (nodes + 1)).tolist(), (0.5 * weights).tolist()


def source_attribution(
    loaded: LoadedModel, text: str, max_new_tokens: int, n_steps: int = 32, internal_batch_size: int = 32
) -> SourceAttribution:
    """Integrated gradients of each of the model's output tokens onto each source token."""
    model, config, tokenizer = loaded.model, loaded.config, loaded.tokenizer
    embedding = family_of_config(config).source_embedding(model)
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

    def chosen_logits(embedded: torch.Tensor) -> torch.Tensor:  # [k, n, e] -> [k, t]: every row's logit
        k = embedded.shape[0]
        with embedded_as(embedding, embedded):
            logits = model(src_ids.expand(k, -1), tgt_in.expand(k, -1))  # [k, t, vocab]
        return logits[:, positions, chosen]

    alphas, weights = gauss_legendre(n_steps)
    gradient_sum = torch.zeros(rows, *source.shape[1:], device=source.device)  # [t, n, e]
    for start in range(0, n_steps, internal_batch_size):
        alpha = torch.tensor(alphas[start : start + internal_batch_size], device=source.device)  # [k]
        weight = torch.tensor(weights[start : start + internal_batch_size], device=source.device)  # [k]
        path = (alpha[:, None, None] * source).requires_grad_()  # [k, n, e]: the baseline is zero
        logits = chosen_logits(path)  # [k, t]
        for row in range(rows):  # one backward per output; a vmapped backward (is_grads_batched) is 30% slower
            (gradients,) = torch.autograd.grad(logits[:, row].sum(), path, retain_graph=row < rows - 1)  # [k, n, e]
            gradient_sum[row] += torch.einsum("k,kne->ne", weight, gradients)
    attributions = (gradient_sum * source).sum(-1)  # [t, n]: (x - baseline) times the path's mean gradient
    with torch.no_grad():
        ends = chosen_logits(torch.cat([source, torch.zeros_like(source)]))  # [2, t]: f(source), f(zero source)
    delta = attributions.sum(-1) - (ends[0] - ends[1])  # [t]
    return SourceAttribution(
        source_tokens=tokenizer.display_tokens(src_ids[0].tolist()),
        output_tokens=tokenizer.display_tokens(targets),
        integrated_gradients=attributions.tolist(),
        convergence_delta=float(delta.abs().max()),
    )
