"""The GRU + attention baseline: attention weights are a distribution over the real source tokens,
padding changes nothing, and teacher forcing on its own output gives its greedy logits."""

from __future__ import annotations

import torch

from inference.core.decoding import pad_batch
from inference.core.tracing import encode_sources, run_with_trace
from tests.conftest import make_tiny_gru_attention


def test_attention_is_a_distribution_over_the_real_source_tokens(tiny_tokenizer):
    loaded = make_tiny_gru_attention(tiny_tokenizer)
    trace = run_with_trace(loaded, ["ein Hund spielt im Park", "ein Buch"], max_new_tokens=5)
    pattern = trace.tensor("cross_attn.pattern")  # [b, 1, steps, n]
    assert torch.allclose(pattern.sum(-1), torch.ones(pattern.shape[:3]))
    short = len(trace.tokens["enc"][1]) - trace.roles["enc"][1].count("pad")
    assert not pattern[1, 0, :, short:].any()
    steps = trace.captures["cross_attn.weights"].index_values("position")
    assert steps == list(range(pattern.shape[2]))


def test_padding_changes_no_translation(tiny_tokenizer):
    loaded = make_tiny_gru_attention(tiny_tokenizer)
    family = loaded.family
    rows = loaded.tokenizer.encode_sources(["ein Hund spielt im Park", "ein Buch"])
    together = family.translate(loaded.model, pad_batch(rows, 0), None, 8, 0)
    assert together == [family.translate(loaded.model, pad_batch([row], 0), None, 8, 0)[0] for row in rows]


def test_teacher_forcing_on_its_own_output_gives_its_logits(tiny_tokenizer):
    loaded = make_tiny_gru_attention(tiny_tokenizer)
    src_ids = encode_sources(loaded, ["ein Hund spielt im Park"])
    tokens, logits = loaded.model.greedy(src_ids, 6)
    tgt_in = torch.cat([torch.tensor([[loaded.config.bos_id]]), tokens[:, :-1]], dim=1)
    with torch.no_grad():
        assert torch.allclose(loaded.model(src_ids, tgt_in), logits, atol=1e-5)
