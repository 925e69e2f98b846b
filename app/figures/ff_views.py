"""What the FF memories page and /api/ff show, built from the analyses
(inference.analyses.ff_*) and the study files stored beside a checkpoint
(training/ff_study.py): key cards for the key browser, the per-position
logit lens, and how a key intervention changed the predictions."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from inference.analyses.ff_aggregation import LogitLens
from inference.analyses.ff_agreement import token_rank
from inference.analyses.ff_mining import StoredTrigger, TriggerStore
from inference.analyses.ff_values import FFMemories, value_logits
from inference.core.tokenizer import TextTokenizer
from inference.core.trace import Trace

KEY_ORDERS = ("agreement", "coefficient", "index")
MAX_PICKED_KEYS = 200  # keys picked by number in one request
VALUE_TOKENS = 8


class ViewError(ValueError):
    """A request the FF views cannot answer as asked (shown as a 400)."""


@dataclass
class ValueProjectionView:
    """softmax(v_i · E^T) of every key of one layer, ready to show."""

    top_ids: torch.Tensor  # [d_ff, VALUE_TOKENS] long, best first
    top_probabilities: torch.Tensor  # [d_ff, VALUE_TOKENS]
    norms: torch.Tensor  # [d_ff] ||v_i||
    logits: torch.Tensor  # [d_ff, vocab] v_i · E^T, for the rank of w_i


def project_values(memories: FFMemories, layer: str) -> ValueProjectionView:
    logits = value_logits(memories, layer)  # [d_ff, vocab]
    probabilities, ids = logits.softmax(dim=-1).topk(VALUE_TOKENS, dim=-1)
    return ValueProjectionView(ids, probabilities, memories.values[layer].norm(dim=-1), logits)


@dataclass
class KeyCard:
    layer: str
    key: int
    value_tokens: list[tuple[str, float]]  # the top tokens of p_i with their probabilities
    value_norm: float
    triggers: list[
        StoredTrigger
    ]  # best first; empty when the key never fired on the mined corpus (or nothing was mined)
    next_token_rank: int | None  # rank of w_i (the top trigger's next token) in p_i; 0 = the key agrees with its value
    top_coefficient: float | None


def key_cards(
    memories: FFMemories,
    tokenizer: TextTokenizer,
    triggers: TriggerStore | None,
    layer: str,
    order: str = "agreement",
    offset: int = 0,
    limit: int = 20,
    keys: list[int] | None = None,
    shown_triggers: int = 10,
) -> tuple[list[KeyCard], int]:
    """(cards of one page of keys, the number of keys in the ordering).

    order: "agreement" ranks keys by the rank of w_i in p_i (agreeing keys
    first, then by coefficient); "coefficient" by the top trigger's m_i;
    "index" by key number. Without mined triggers only "index" applies.
    `keys` picks keys by number instead (in that order)."""
    if layer not in memories.values:
        raise ViewError(f"unknown FF layer {layer!r}; this model has {', '.join(memories.layers)}")
    if order not in KEY_ORDERS:
        raise ViewError(f"unknown order {order!r}; choose {', '.join(KEY_ORDERS)}")
    projection = project_values(memories, layer)
    d_ff = projection.norms.shape[0]
    ranks, coefficients = _key_statistics(projection, triggers, layer, d_ff)
    if keys is not None:
        bad = [k for k in keys if not 0 <= k < d_ff]
        if bad:
            raise ViewError(f"keys {bad} are out of range for {layer} (0 to {d_ff - 1})")
        chosen = keys
        total = len(keys)
    else:
        ordering = _ordering(order, ranks, coefficients, d_ff)
        total = len(ordering)
        chosen = ordering[offset : offset + limit]
    cards = []
    for key in chosen:
        fired = coefficients[key] > float("-inf")
        cards.append(
            KeyCard(
                layer=layer,
                key=key,
                value_tokens=list(
                    zip(
                        tokenizer.display_tokens(projection.top_ids[key].tolist()),
                        projection.top_probabilities[key].tolist(),
                    )
                ),
                value_norm=float(projection.norms[key]),
                triggers=triggers.triggers(layer, key)[:shown_triggers] if triggers is not None and fired else [],
                next_token_rank=int(ranks[key]) if ranks[key] >= 0 else None,
                top_coefficient=float(coefficients[key]) if fired else None,
            )
        )
    return cards, total


def _key_statistics(
    projection: ValueProjectionView, triggers: TriggerStore | None, layer: str, d_ff: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rank of w_i in p_i [d_ff] long, -1 without a trigger; top trigger coefficient [d_ff], -inf without one)."""
    ranks = torch.full((d_ff,), -1, dtype=torch.long)
    if triggers is None or layer not in triggers.layers:
        return ranks, torch.full((d_ff,), float("-inf"))
    next_tokens = triggers.trigger_tokens()[layer].next[:, 0]  # [d_ff], -1 for keys that never fired
    fired = (next_tokens >= 0).nonzero().flatten()
    ranks[fired] = token_rank(projection.logits[fired], next_tokens[fired])
    return ranks, triggers.top_coefficients(layer)


def _ordering(order: str, ranks: torch.Tensor, coefficients: torch.Tensor, d_ff: int) -> list[int]:
    if order == "index":
        return list(range(d_ff))
    fired = (ranks >= 0).nonzero().flatten().tolist()
    if not fired:
        raise ViewError(
            "no trigger examples are stored for this model, so keys can only be listed by index; "
            "mine them with `python -m training ff-memories checkpoints/<model>`"
        )
    if order == "coefficient":
        return sorted(fired, key=lambda k: -float(coefficients[k]))
    return sorted(fired, key=lambda k: (int(ranks[k]), -float(coefficients[k])))


@dataclass
class LensCell:
    """One position of one layer."""

    keys: list[tuple[int, float, str]]  # (key, m_i ||v_i||, top token of its value), largest first
    residual: list[tuple[str, float]]  # top tokens of the residual entering the FF layer
    ff: list[tuple[str, float]]  # of the FF output
    output: list[tuple[str, float]]  # of the layer output


@dataclass
class LensTable:
    tokens: list[str]  # input at each position: the prefix predicted from ends with it
    layers: list[str]
    cells: list[list[LensCell]]  # [layer][position]


def lens_table(lens: LogitLens, tokenizer: TextTokenizer) -> LensTable:
    def tokens_with(ids: torch.Tensor, probabilities: torch.Tensor) -> list[tuple[str, float]]:
        return list(zip(tokenizer.display_tokens(ids.tolist()), probabilities.tolist()))

    cells = []
    for layer in lens.layers:
        row = []
        for p in range(len(lens.tokens)):
            keys = list(
                zip(
                    layer.key_indices[p].tolist(),
                    layer.key_scores[p].tolist(),
                    tokenizer.display_tokens(layer.key_value_tokens[p].tolist()),
                )
            )
            row.append(
                LensCell(
                    [k for k in keys if k[1] > 0],  # an inactive key adds nothing
                    tokens_with(layer.residual_tokens[p], layer.residual_probabilities[p]),
                    tokens_with(layer.ff_tokens[p], layer.ff_probabilities[p]),
                    tokens_with(layer.output_tokens[p], layer.output_probabilities[p]),
                )
            )
        cells.append(row)
    return LensTable(lens.tokens, [layer.layer for layer in lens.layers], cells)


@dataclass
class PredictionChange:
    """The model's next-token prediction at one position, without and with the intervention."""

    position: int
    token: str  # the input there
    before: str
    before_probability: float
    after: str
    after_probability: float
    before_token_after: float  # the probability the edited model still gives the original prediction


def prediction_changes(plain: Trace, edited: Trace, axis: str, tokenizer: TextTokenizer) -> list[PredictionChange]:
    """Every position both runs share (the input, and the continuation up to where the two differ)."""
    plain_ids, edited_ids = plain.output_ids[0], edited.output_ids[0]
    # Position p reads the stream up to target p - 1; position 0 (BOS, or the prompt's EOS) is always shared.
    shared = 1
    while shared <= min(len(plain_ids), len(edited_ids)) and plain_ids[shared - 1] == edited_ids[shared - 1]:
        shared += 1
    before = plain.logits[0, :shared].softmax(dim=-1)  # [shared, vocab]
    after = edited.logits[0, :shared].softmax(dim=-1)
    before_p, before_top = before.max(dim=-1)
    after_p, after_top = after.max(dim=-1)
    kept = after.gather(1, before_top[:, None])[:, 0]
    tokens = plain.tokens[axis][0]
    shown_before, shown_after = (
        tokenizer.display_tokens(before_top.tolist()),
        tokenizer.display_tokens(after_top.tolist()),
    )
    return [
        PredictionChange(
            p, tokens[p], shown_before[p], float(before_p[p]), shown_after[p], float(after_p[p]), float(kept[p])
        )
        for p in range(shared)
    ]
