"""Key-value agreement per layer (Geva et al., paper 003, Section 4.2).

The paper's definition, followed here (shared/papers/003: "w_i^ℓ -
следующий token в примере, который соответствует наибольшему m_i^ℓ", the
next token of the example with the largest m_i^ℓ; "Key-value agreement:
argmax(p_i^ℓ) = w_i^ℓ"): w_i is the next token of key i's top-1 trigger
example, and key i agrees when argmax(p_i) = w_i, with
p_i = softmax(v_i · E^T); the agreement rate is the fraction of keys that
agree. Beside it, the rank of
w_i in p_i (0 = top; the paper's Figure 6).

Keys that never fired on the corpus (no trigger with m_i > 0) have no w_i
and are left out of every rate; `keys_with_triggers` is the denominator.

Also reported, so that readings of the released code (mega002/ff-layers,
analysis/key_value_agreement.py) can be compared with the paper's:
- any_trigger_agreement: argmax(p_i) is the next token of at least one of
  the key's top-k triggers (the released code counts matches over all of
  them);
- trigger_token_agreement: argmax(p_i) is the top trigger's own last token
  (the released code reads the token one before the last of the stored
  prefix, which is this token or the one before it depending on its BOS
  offset).
Baseline: every value is paired with the triggers of another key, by a
seeded random permutation of the keys that have triggers; agreement above
the baseline is what the values owe to their own keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from inference.analyses.ff_mining import TriggerTokens


@dataclass
class LayerAgreement:
    layer: str
    keys_with_triggers: int  # keys whose top trigger fired (m_i > 0): the denominator of the rates
    agreement: float  # the paper's: fraction of those keys with argmax(p_i) = w_i
    baseline_agreement: float  # the same with each value paired to a randomly permuted key's w
    any_trigger_agreement: float  # argmax(p_i) is the next token of any of the key's triggers
    trigger_token_agreement: float  # argmax(p_i) is the top trigger's own last token
    ranks: torch.Tensor  # [d_ff] long, rank of w_i in p_i (0 = top); -1 for keys without triggers
    baseline_ranks: torch.Tensor  # [d_ff] long, rank of the permuted key's w in p_i; -1 likewise


def key_value_agreement(
    value_logits: Mapping[str, torch.Tensor], triggers: Mapping[str, TriggerTokens], seed: int = 0
) -> list[LayerAgreement]:
    """value_logits: layer -> v_i · E^T [d_ff, vocab] (ff_values.value_logits);
    triggers: layer -> the mined TriggerTokens of the same layer."""
    generator = torch.Generator().manual_seed(seed)
    results = []
    for layer, logits in value_logits.items():
        tokens = triggers[layer]
        top_token = logits.argmax(dim=-1)  # [d_ff]
        has_trigger = tokens.next[:, 0] >= 0  # [d_ff]
        keys = has_trigger.nonzero().flatten()  # [n]
        w = tokens.next[keys, 0]  # [n]
        shuffled_w = w[torch.randperm(len(keys), generator=generator)]  # [n]
        n = max(len(keys), 1)
        ranks = torch.full_like(top_token, -1)
        baseline_ranks = torch.full_like(top_token, -1)
        ranks[keys] = token_rank(logits[keys], w)
        baseline_ranks[keys] = token_rank(logits[keys], shuffled_w)
        results.append(
            LayerAgreement(
                layer=layer,
                keys_with_triggers=len(keys),
                agreement=(top_token[keys] == w).sum().item() / n,
                baseline_agreement=(top_token[keys] == shuffled_w).sum().item() / n,
                any_trigger_agreement=(tokens.next[keys] == top_token[keys, None]).any(dim=1).sum().item() / n,
                trigger_token_agreement=(top_token[keys] == tokens.trigger[keys, 0]).sum().item() / n,
                ranks=ranks,
                baseline_ranks=baseline_ranks,
            )
        )
    return results


def token_rank(logits: torch.Tensor, token: torch.Tensor) -> torch.Tensor:  # logits [n, vocab], token [n] -> [n]
    """Tokens scored strictly above `token`: 0 when it is the top (ties count in its favour)."""
    return (logits > logits.gather(1, token[:, None])).sum(dim=1)
