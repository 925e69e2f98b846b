"""How FF memories add up to predictions (Geva et al., paper 003, Section 5).

top(h) is the token a vector h points at: argmax of its logits, where a
residual-stream state (r, o) is read as the model reads its last layer
(`FFMemories.stream_logits`: h · E^T in the post-LN translation decoders,
final_norm(h) · E^T in the pre-LN language model) and an FF output y, like a
value, is projected directly (y · E^T). For every prediction (a real
position of the memories' axis) and FF layer:

- r: the residual entering the FF layer (`resid_mid`). In the post-LN
  translation decoders it is also the FF input; in the pre-LN language
  model, as in the paper's, the FF input is LN(r).
- y: the FF output, sum_i m_i v_i + b (`ff.out`).
- o: the layer output, `FFMemories.layer_output` (LN(r + y) post-LN, r + y
  pre-LN as in the paper).

Reported per prediction:
- active memories: keys with m_i > 0 (Section 5.1, Figure 7);
- zero agreement: no considered memory's value points where y points,
  for all i: top(v_i) != top(y) (Section 5.1: the "layer" there is the FF
  layer and its output y). Considered: the active memories, or the
  `top_memories` largest by m_i ||v_i||. Also against the layer output o;
- the case (Section 5.2, Figure 10): residual_wins top(r) = top(o) !=
  top(y); ff_wins top(y) = top(o) != top(r); all_agree; composition, where
  top(o) differs from both;
- whether top(r) is already the model's final prediction (Figure 9).

`logit_lens` is the per-input view of the same vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from inference.analyses.ff_values import value_logits
from inference.core.ff_memories import FFMemories
from inference.core.hook_names import ff_keys, ff_output
from inference.core.trace import Role, Trace

CASES = ("residual_wins", "ff_wins", "all_agree", "composition")


@dataclass
class LayerPredictions:
    """One layer over the n predictions of an FFAggregation."""

    layer: str
    active_memories: torch.Tensor  # [n] long, keys with m_i > 0
    residual_top: torch.Tensor  # [n] long, top(r)
    ff_top: torch.Tensor  # [n] long, top(y)
    output_top: torch.Tensor  # [n] long, top(o)
    case: torch.Tensor  # [n] long, index into CASES
    zero_agreement: torch.Tensor  # [n] bool, no considered memory has top(v_i) = top(y)
    output_zero_agreement: torch.Tensor  # [n] bool, none has top(v_i) = top(o)


@dataclass
class FFAggregation:
    examples: torch.Tensor  # [n] long, the example of each prediction
    positions: torch.Tensor  # [n] long, its position on the memories' axis
    final_top: torch.Tensor  # [n] long, the model's prediction (argmax of the logits)
    layers: list[LayerPredictions]  # in depth order


@dataclass
class LayerSummary:
    layer: str
    predictions: int
    mean_active_memories: float
    residual_wins: float  # the four case fractions sum to 1
    ff_wins: float
    all_agree: float
    composition: float
    zero_agreement: float  # fraction of predictions
    output_zero_agreement: float
    residual_agrees_with_final: float  # top(r) = the model's final prediction


def prediction_cases(
    residual_top: torch.Tensor, ff_top: torch.Tensor, output_top: torch.Tensor
) -> torch.Tensor:  # [n] each -> [n]
    """Index into CASES of every prediction."""
    residual_agrees = residual_top == output_top
    ff_agrees = ff_top == output_top
    case = torch.full_like(output_top, CASES.index("composition"))
    case[residual_agrees & ~ff_agrees] = CASES.index("residual_wins")
    case[ff_agrees & ~residual_agrees] = CASES.index("ff_wins")
    case[residual_agrees & ff_agrees] = CASES.index("all_agree")
    return case


def value_tops(memories: FFMemories) -> dict[str, torch.Tensor]:
    """Each FF layer's values' top tokens {layer: [d_ff]}: the same for every trace, so a corpus computes them once."""
    return {layer: value_logits(memories, layer).argmax(dim=-1) for layer in memories.layers}


def ff_aggregation(
    trace: Trace,
    memories: FFMemories,
    top_memories: int | None = None,
    tops: dict[str, torch.Tensor] | None = None,  # value_tops(memories), where the caller keeps them
) -> FFAggregation:
    """Section 5's quantities for every real position of a trace captured
    with memories.capture_hooks()."""
    tops = value_tops(memories) if tops is None else tops
    examples, positions = real_positions(trace, memories.axis)
    layers = []
    for layer in memories.layers:
        m, r, y, o = layer_vectors(trace, memories, layer, examples, positions)
        residual_top, ff_top, output_top = memories.lens_logits(r, y, o).argmax(dim=-1)  # 3 x [n]
        value_top = tops[layer]  # [d_ff]
        considered = _considered_memories(m, memories.values[layer].norm(dim=-1), top_memories)  # [n, d_ff]
        layers.append(
            LayerPredictions(
                layer=layer,
                active_memories=(m > 0).sum(dim=-1),
                residual_top=residual_top,
                ff_top=ff_top,
                output_top=output_top,
                case=prediction_cases(residual_top, ff_top, output_top),
                zero_agreement=~(considered & (value_top[None, :] == ff_top[:, None])).any(dim=-1),
                output_zero_agreement=~(considered & (value_top[None, :] == output_top[:, None])).any(dim=-1),
            )
        )
    return FFAggregation(examples, positions, trace.logits[examples, positions].argmax(dim=-1), layers)


def summarise_aggregation(aggregations: Sequence[FFAggregation]) -> list[LayerSummary]:
    """Fractions per layer over the predictions of several traces (a corpus in batches)."""
    final_top = torch.cat([a.final_top for a in aggregations])  # [n]
    n = len(final_top)
    summaries = []
    for depth, first in enumerate(aggregations[0].layers):
        parts = [a.layers[depth] for a in aggregations]
        joined = {
            field: torch.cat([getattr(p, field) for p in parts])
            for field in ("active_memories", "case", "zero_agreement", "output_zero_agreement", "residual_top")
        }  # field -> [n]
        residual_wins, ff_wins, all_agree, composition = (
            torch.bincount(joined["case"], minlength=len(CASES)).double() / n
        ).tolist()
        summaries.append(
            LayerSummary(
                layer=first.layer,
                predictions=n,
                mean_active_memories=joined["active_memories"].double().mean().item(),
                residual_wins=residual_wins,
                ff_wins=ff_wins,
                all_agree=all_agree,
                composition=composition,
                zero_agreement=joined["zero_agreement"].double().mean().item(),
                output_zero_agreement=joined["output_zero_agreement"].double().mean().item(),
                residual_agrees_with_final=(joined["residual_top"] == final_top).double().mean().item(),
            )
        )
    return summaries


@dataclass
class LensLayer:
    """One layer at every real position of one example (t positions)."""

    layer: str
    key_indices: torch.Tensor  # [t, top_keys] long, the keys with the largest m_i ||v_i||
    key_scores: torch.Tensor  # [t, top_keys] m_i ||v_i||
    key_value_tokens: torch.Tensor  # [t, top_keys] long, top(v_i) of those keys
    residual_tokens: torch.Tensor  # [t, top_tokens] long, best first
    residual_probabilities: torch.Tensor  # [t, top_tokens] under the softmax of r's logits
    ff_tokens: torch.Tensor
    ff_probabilities: torch.Tensor
    output_tokens: torch.Tensor
    output_probabilities: torch.Tensor


@dataclass
class LogitLens:
    tokens: list[str]  # the input at each real position: the prefix predicted from ends with it
    layers: list[LensLayer]


def logit_lens(
    trace: Trace,
    memories: FFMemories,
    example: int = 0,
    top_keys: int = 5,
    top_tokens: int = 5,
    layers: list[str] | None = None,
) -> LogitLens:
    """The lens of `layers` (None: every FF layer) at every real position of one example."""
    examples, positions = example_positions(trace, memories.axis, example)
    read = []
    for layer in memories.layers if layers is None else layers:
        m, r, y, o = layer_vectors(trace, memories, layer, examples, positions)
        key_scores, key_indices = (m * memories.values[layer].norm(dim=-1)).topk(top_keys, dim=-1)  # [t, top_keys]
        value_top = value_top_tokens(memories, layer)  # [d_ff]
        probabilities, ids = _top_probabilities(memories.lens_logits(r, y, o).flatten(0, 1), top_tokens)  # [3t, k]
        (rp, fp, op), (rt, ft, ot) = probabilities.chunk(3), ids.chunk(3)
        read.append(LensLayer(layer, key_indices, key_scores, value_top[key_indices], rt, rp, ft, fp, ot, op))
    return LogitLens([trace.tokens[memories.axis][example][p] for p in positions.tolist()], read)


def value_top_tokens(memories: FFMemories, layer: str) -> torch.Tensor:  # [d_ff] long
    """Each value's most probable token (the argmax of v_i · E^T), computed once per layer and kept: a [d_ff, vocab]
    product that depends on the weights only."""
    key = ("value_top_tokens", layer)
    if key not in memories.derived:
        memories.derived[key] = value_logits(memories, layer).argmax(dim=-1)
    return memories.derived[key]


def _top_probabilities(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:  # [n, vocab] -> 2 x [n, k]
    """(probabilities, ids) of the k most probable tokens, without the whole softmax: exp(logit - logsumexp), the
    logsumexp shifted by the top logit topk has found (no second pass for the maximum). Overwrites `logits`."""
    top, ids = logits.topk(k, dim=-1)  # [n, k], best first
    highest = top[:, :1]  # [n, 1]
    log_total = logits.sub_(highest).exp_().sum(dim=-1, keepdim=True).log_()  # [n, 1]: logsumexp - highest
    return (top - highest - log_total).exp(), ids


def real_positions(trace: Trace, axis: str) -> tuple[torch.Tensor, torch.Tensor]:  # ([n], [n]) long
    rows = [(e, p) for e, roles in enumerate(trace.roles[axis]) for p, role in enumerate(roles) if role != Role.PAD]
    return torch.tensor([e for e, _ in rows]), torch.tensor([p for _, p in rows])


def example_positions(trace: Trace, axis: str, example: int) -> tuple[torch.Tensor, torch.Tensor]:  # 2 x [t] long
    """(examples, positions) of one example's real positions: the example's index repeated, and its positions."""
    examples, positions = real_positions(trace, axis)
    positions = positions[examples == example]
    return torch.full_like(positions, example), positions


def layer_vectors(trace: Trace, memories: FFMemories, layer: str, examples: torch.Tensor, positions: torch.Tensor):
    """(m [n, d_ff], r [n, d], y [n, d], o [n, d]) of one layer at the given predictions."""
    hooks = (ff_keys(layer), memories.residual_hook(layer), ff_output(layer))
    missing = [hook for hook in hooks if hook not in trace.captures]
    if missing:
        raise ValueError(
            f"the trace lacks {missing}; capture them: run_with_trace(..., names=memories.capture_hooks())"
        )
    m, r, y = (trace.tensor(hook)[examples, positions].float() for hook in hooks)
    return m, r, y, memories.layer_output(layer, r, y)


def _considered_memories(
    m: torch.Tensor, value_norms: torch.Tensor, top_memories: int | None
) -> torch.Tensor:  # [n, d_ff] bool
    """The active memories (m_i > 0), or the top_memories of them by m_i ||v_i||."""
    active = m > 0
    if top_memories is None:
        return active
    top = (m * value_norms).topk(min(top_memories, m.shape[-1]), dim=-1).indices  # [n, top]
    return active & torch.zeros_like(active).scatter_(1, top, True)
