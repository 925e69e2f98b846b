"""What the FF memories page and /api/ff show, built from the analyses
(inference.analyses.ff_*) and the study files stored beside a checkpoint
(training/studies/ff_keys.py): key cards for the key browser, the per-position
logit lens, and how a key intervention changed the predictions."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, get_args

import torch
from markupsafe import Markup, escape

from inference.analyses.ff_aggregation import LogitLens
from inference.analyses.ff_agreement import token_rank
from inference.analyses.ff_mining import StoredTrigger, TriggerStore
from inference.analyses.ff_values import value_logits
from inference.core.ff_memories import FFMemories
from inference.core.tokenizer import TextTokenizer
from inference.core.trace import Trace

KeyOrder = Literal["effect", "agreement", "coefficient", "index"]
KEY_ORDERS: tuple[str, ...] = get_args(KeyOrder)
TEXT_ORDERS = ("effect",)  # orders read from a run of the page's text, not from mined triggers
VALUE_TOKENS = 8
TRIGGER_LINES = 10  # lines of trigger examples a key card shows, identical contexts merged
NEXT_TOKENS = 5  # next tokens a merged line names; the rest are counted
UNSEEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"}  # controls, format, surrogates, unassigned, spaces
SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}
DOTTED_CIRCLE = "\u25cc"  # Unicode's base for showing a combining mark on its own


class ViewError(ValueError):
    """A request the FF views cannot answer as asked (shown as a 400)."""


def shown_token(token: str) -> str:
    r"""A (display) token as the FF page prints it, every character visible and read one way only: a
    character that prints nothing or nothing distinct (a control or format character, a space other
    than " ", a line separator, a surrogate, an unassigned or private-use code point) becomes a
    Python-style escape, a backslash doubles, and a combining mark that opens the piece sits on
    U+25CC instead of on the "##" before it.

    "##\xa0" -> "##\\xa0", "\t" -> "\\t", "##\u200d" -> "##\\u200d", "\\" -> "\\\\",
    "##\u0301" -> "##\u25cc\u0301"; "Hund", "##중" and "<eos>" stay as they are."""
    shown = []
    for i, character in enumerate(token):
        category = unicodedata.category(character)
        if character in SHORT_ESCAPES:
            shown.append(SHORT_ESCAPES[character])
        elif category in UNSEEN_CATEGORIES and character != " ":
            code = ord(character)
            shown.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        elif category.startswith("M") and token[:i] in ("", "##"):
            shown.append(DOTTED_CIRCLE + character)
        else:
            shown.append(character)
    return "".join(shown)


def token_title(token: str) -> str:
    """The code point and Unicode name of every distinct non-ASCII character of a token ("" for an
    ASCII one), so that a character the browser has no glyph for (a box) can still be read:
    "##중" -> "U+C911 HANGUL SYLLABLE JUNG"."""
    characters = dict.fromkeys(c for c in token if ord(c) > 0x7E and c != DOTTED_CIRCLE)
    return ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in characters)


SPECIAL_TOKEN = re.compile(r"<\|?([A-Za-z][A-Za-z0-9_]*)\|?>")  # <eos>, <|im_start|>: one token, a tokenizer's own


@lru_cache(maxsize=1 << 14)  # a lens table prints some 6,000 tokens of a few hundred distinct ones
def token_html(token: str, title: str = "") -> Markup:
    """The one way the FF page prints a token: a special token (the whole token <name> or <|name|>: text never
    reads as one token so) as a chip naming it, titled with the token itself; any other as shown_token's text,
    HTML-escaped, in a span whose title names its non-ASCII characters (after `title`, e.g. a probability) where
    there is one."""
    special = SPECIAL_TOKEN.fullmatch(token)
    if special:
        title = " · ".join(part for part in (title, f"special token {token}") if part)
        return Markup('<span class="token special" title="{}">{}</span>').format(title, special.group(1))
    shown = shown_token(token)
    title = " · ".join(part for part in (title, token_title(shown)) if part)
    if not title:
        return escape(shown)
    return Markup('<span class="token" title="{}">{}</span>').format(title, shown)


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
    effect: float | None = None  # the key's largest direct share of a prediction's margin on the page's text


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
    effects: torch.Tensor | None = None,
) -> tuple[list[KeyCard], int]:
    """(cards of one page of keys, the number of keys in the ordering).

    order: "agreement" ranks keys by the rank of w_i in p_i (agreeing keys
    first, then by coefficient); "coefficient" by the top trigger's m_i;
    "index" by key number; "effect" by `effects` ([d_ff], each key's largest
    direct share of a prediction's margin in a run of the page's text,
    inference.analyses.ff_effects), largest first. Without mined triggers only
    "index" and "effect" apply. `keys` picks keys by number instead (in that order)."""
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
        ordering = _ordering(order, ranks, coefficients, d_ff, effects)
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
                effect=float(effects[key]) if effects is not None else None,
            )
        )
    return cards, total


@dataclass
class TriggerLine:
    """The trigger examples of one key that show the same context: one prefix opening several
    sentences ("<eos> Awards" in ten), or the same stored window of longer prefixes."""

    context: list[str]  # display tokens, as stored; the last one is the trigger token
    truncated: bool  # the prefixes are longer than the stored window
    next_tokens: list[tuple[str, int]]  # each token that follows, with in how many of the sentences; most first
    coefficient: float  # the largest m_i among them
    sentences: int  # how many of the key's top sentences show this context


def trigger_lines(triggers: list[StoredTrigger], limit: int = TRIGGER_LINES) -> list[TriggerLine]:
    """`triggers` (best first) merged by shown context, best first, at most `limit` lines."""
    lines: dict[tuple[bool, tuple[str, ...]], TriggerLine] = {}
    for trigger in triggers:
        shown = (trigger.truncated, tuple(trigger.context))
        line = lines.get(shown)
        if line is None:
            if len(lines) == limit:
                continue
            line = lines[shown] = TriggerLine(list(trigger.context), trigger.truncated, [], trigger.coefficient, 0)
        line.sentences += 1
        line.coefficient = max(line.coefficient, trigger.coefficient)
        counts = dict(line.next_tokens)
        counts[trigger.next_token] = counts.get(trigger.next_token, 0) + 1
        line.next_tokens = sorted(counts.items(), key=lambda item: -item[1])  # stable: ties best first
    return list(lines.values())


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


def _ordering(
    order: str, ranks: torch.Tensor, coefficients: torch.Tensor, d_ff: int, effects: torch.Tensor | None
) -> list[int]:
    if order == "index":
        return list(range(d_ff))
    if order == "effect":
        if effects is None:
            raise ViewError("keys are ordered by their effect on a text: give the text")
        return effects.argsort(descending=True, stable=True).tolist()
    fired = (ranks >= 0).nonzero().flatten().tolist()
    if not fired:
        raise ViewError(
            "no trigger examples are stored for this model, so keys can only be listed by index; "
            "mine them with `python -m training ff-memories <the model's folder>`"
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


def lens_row_html(token: str, cell: LensCell, layer: int) -> Markup:
    """One row of the FF page's lens table: the input token, the top keys (buttons that open the key's card) and
    the three streams' top tokens with their probabilities. Built here with f-strings of numbers and token_html's
    escaped Markup only: a 253-token table prints some 6,000 tokens, and a template call per token was most of
    its rendering."""

    def tokens(pairs: list[tuple[str, float]]) -> str:
        return "".join(f"{token_html(t)} <small>{p:.2f}</small> " for t, p in pairs)

    keys = "".join(
        f'<button type="button" class="key-link" data-layer="{layer:d}" data-key="{key:d}" title="m·‖v‖ {score:.2f}">'
        f"{key:d} → {token_html(value)}</button> "
        for key, score, value in cell.keys
    )
    return Markup(
        f"<tr><td>{token_html(token)}</td><td>{keys}</td><td>{tokens(cell.residual)}</td><td>{tokens(cell.ff)}</td>"
        f"<td>{tokens(cell.output)}</td></tr>"
    )


@dataclass
class LensTable:
    tokens: list[str]  # input at each position: the prefix predicted from ends with it
    layers: list[str]
    cells: list[list[LensCell]]  # [layer][position]


def lens_table(lens: LogitLens, tokenizer: TextTokenizer) -> LensTable:
    """The lens as cells of plain values; every distinct token id is shown once (one display_tokens call) and every
    tensor read once per layer (per-position reads were most of an every-layer table at 253 tokens)."""
    id_tensors = [
        t
        for layer in lens.layers
        for t in (layer.key_value_tokens, layer.residual_tokens, layer.ff_tokens, layer.output_tokens)
    ]
    distinct = torch.cat([t.flatten() for t in id_tensors]).unique().tolist() if id_tensors else []
    shown = dict(zip(distinct, tokenizer.display_tokens(distinct)))

    def tokens_with(ids: list[int], probabilities: list[float]) -> list[tuple[str, float]]:
        return [(shown[i], p) for i, p in zip(ids, probabilities)]

    cells = []
    for layer in lens.layers:
        keys, scores, values = (t.tolist() for t in (layer.key_indices, layer.key_scores, layer.key_value_tokens))
        streams = [
            (ids.tolist(), probabilities.tolist())
            for ids, probabilities in (
                (layer.residual_tokens, layer.residual_probabilities),
                (layer.ff_tokens, layer.ff_probabilities),
                (layer.output_tokens, layer.output_probabilities),
            )
        ]
        cells.append(
            [
                LensCell(
                    [
                        (k, s, shown[v]) for k, s, v in zip(keys[p], scores[p], values[p]) if s > 0
                    ],  # inactive: adds nothing
                    *(tokens_with(ids[p], probabilities[p]) for ids, probabilities in streams),
                )
                for p in range(len(lens.tokens))
            ]
        )
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


@dataclass
class EditOutcome:
    """What key edits did to one input, in a line: how many shared positions' predictions they change."""

    positions: int  # positions both runs share
    changed: int  # of those, where the top prediction is another token
    largest_drop: float  # the largest fall of p(original prediction), over the shared positions
    continuation_changed: bool


def edit_outcome(changes: list[PredictionChange], plain_output: str, edited_output: str) -> EditOutcome:
    return EditOutcome(
        len(changes),
        sum(change.before != change.after for change in changes),
        max((change.before_probability - change.before_token_after for change in changes), default=0.0),
        plain_output != edited_output,
    )


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
