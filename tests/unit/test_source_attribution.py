"""Integrated gradients of a model's whole output onto its source (the Focus
page), on tiny models: each row is complete (sums to the logit's change from
a zero source, computed here directly), rows follow the greedy output, a cut
output has no EOS row; and the focus summary of hand-made matrices."""

from __future__ import annotations

import pytest
import torch

from inference.analyses.attention import LayerAttention
from inference.analyses.focus import focus, row_shares, source_attention_stack
from inference.analyses.source_attribution import SourceAttribution
from inference.core.tracing import encode_sources, run_with_trace
from inference.runs.source_attribution import source_attribution
from tests.conftest import make_tiny, make_tiny_active_memory, make_tiny_gru_attention

SOURCE = "ein Hund spielt im Park"


@pytest.fixture(params=["extended", "neural_gpu", "gru"])
def loaded(request, tiny_tokenizer):
    if request.param == "gru":
        return make_tiny_gru_attention(tiny_tokenizer)
    return make_tiny_active_memory(tiny_tokenizer, request.param)


def logit_with_source(loaded, tgt_in, position, token, zero: bool) -> float:
    """The teacher-forced logit, the source embedded as usual or replaced by zero vectors."""
    embedding = loaded.family.source_embedding(loaded.model)
    handle = embedding.register_forward_hook(lambda _m, _a, out: torch.zeros_like(out)) if zero else None
    try:
        with torch.no_grad():
            logits = loaded.model(encode_sources(loaded, [SOURCE]), tgt_in)
    finally:
        if handle:
            handle.remove()
    return logits[0, position, token].item()


def model_and_axes(loaded):
    return loaded.model, loaded.family.token_axes


def test_every_row_is_complete_and_follows_the_greedy_output(loaded):
    found = source_attribution(loaded, SOURCE, max_new_tokens=6, n_steps=64)
    output_ids = run_with_trace(loaded, SOURCE, max_new_tokens=6).output_ids[0]
    shown = loaded.tokenizer.display_tokens(output_ids)
    ended = found.output_tokens[-1] == "<eos>"  # it said EOS in time: that choice is explained too
    assert found.output_tokens == ([*shown, "<eos>"] if ended else shown)
    targets = output_ids + [loaded.config.eos_id] if ended else output_ids
    tgt_in = torch.tensor([[loaded.config.bos_id] + targets[:-1]])
    for position, token in enumerate(targets):
        change = logit_with_source(loaded, tgt_in, position, token, False) - logit_with_source(
            loaded, tgt_in, position, token, True
        )
        row = found.integrated_gradients[position]
        assert len(row) == len(found.source_tokens)
        assert sum(row) == pytest.approx(change, abs=0.05 + 0.05 * abs(change)), position
    assert found.convergence_delta < 0.05 + 0.05 * max(abs(v) for row in found.integrated_gradients for v in row)


def test_an_output_cut_short_has_no_eos_row(tiny_tokenizer):
    loaded = make_tiny_gru_attention(tiny_tokenizer)
    found = source_attribution(loaded, SOURCE, max_new_tokens=2, n_steps=8)
    output_ids = run_with_trace(loaded, SOURCE, max_new_tokens=2).output_ids[0]
    assert len(output_ids) >= 2  # the untrained model says no EOS in time
    assert found.output_tokens == loaded.tokenizer.display_tokens(output_ids)


def test_a_family_without_a_source_embedding_is_refused(tiny_tokenizer):
    with pytest.raises(ValueError, match="names no source embedding"):
        source_attribution(make_tiny("memtransformer", tiny_tokenizer), SOURCE, max_new_tokens=2, n_steps=8)


def test_the_attention_shown_is_the_one_over_the_source(tiny_tokenizer):
    assert source_attention_stack(*model_and_axes(make_tiny_gru_attention(tiny_tokenizer))) == ("cross_attn", 0)
    assert source_attention_stack(*model_and_axes(make_tiny_active_memory(tiny_tokenizer))) is None
    stack, layer = source_attention_stack(*model_and_axes(make_tiny("memtransformer", tiny_tokenizer)))
    assert (
        stack == "decoder.cross_attn"
        and layer == make_tiny("memtransformer", tiny_tokenizer).model.config.n_decoder_layers - 1
    )


def test_shares_peaks_and_agreement_of_hand_made_views():
    assert row_shares(torch.tensor([[1.0, -3.0], [0.0, 0.0]])).tolist() == [[0.25, 0.75], [0.0, 0.0]]
    attribution = SourceAttribution(
        source_tokens=["a", "b", "<eos>"],
        output_tokens=["x", "y"],
        integrated_gradients=[[2.0, -1.0, 1.0], [0.5, 0.0, -1.5]],
        convergence_delta=0.0,
    )
    weights = torch.tensor([[[0.6, 0.3, 0.1], [0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]])  # [head, queries, keys]
    attention = LayerAttention("cross_attn", 0, weights, ["<bos>", "x", "y"], ["a", "b", "<eos>"], [], [])
    view = focus(attribution, attention)
    assert torch.allclose(torch.tensor(view.attribution_share), torch.tensor([[0.5, 0.25, 0.25], [0.25, 0.0, 0.75]]))
    assert view.peak_attribution == pytest.approx((0.5 + 0.75) / 2)
    assert torch.allclose(torch.tensor(view.attention), weights[0, :2])  # the first two steps: outputs x and y
    assert view.peak_attention == pytest.approx(0.65)
    assert view.agreement == 0.5  # output x: a and a; output y: <eos> and a
    alone = focus(attribution, None)
    assert alone.attention is None and alone.agreement is None
    other_source = LayerAttention("cross_attn", 0, weights, ["<bos>", "x", "y"], ["a", "c", "<eos>"], [], [])
    with pytest.raises(ValueError, match="different runs"):
        focus(attribution, other_source)


def captum_rows(loaded, n_steps: int) -> tuple[list[list[float]], list[float]]:
    """Captum's IntegratedGradients run the plain way, every (output, path point) pair its own row of the model:
    (each output's attribution onto each source token, each row's convergence delta)."""
    from captum.attr import IntegratedGradients

    found = source_attribution(loaded, SOURCE, max_new_tokens=6, n_steps=8)  # the targets it explains
    embedding = loaded.family.source_embedding(loaded.model)
    output_ids = run_with_trace(loaded, SOURCE, max_new_tokens=6).output_ids[0]
    targets = output_ids + [loaded.config.eos_id] if found.output_tokens[-1] == "<eos>" else output_ids
    src_ids = encode_sources(loaded, [SOURCE])  # [1, n]
    tgt_in = torch.tensor([[loaded.config.bos_id] + targets[:-1]])  # [1, t]
    rows = len(targets)

    def chosen_logit(embedded, position, token):  # [k, n, e] -> [k]
        handle = embedding.register_forward_hook(lambda _m, _a, _out: embedded)
        try:
            logits = loaded.model(src_ids.expand(embedded.shape[0], -1), tgt_in.expand(embedded.shape[0], -1))
        finally:
            handle.remove()
        return logits[torch.arange(embedded.shape[0]), position, token]

    with torch.no_grad():
        source = embedding(src_ids).expand(rows, -1, -1).contiguous()  # [t, n, e]
    attributions, delta = IntegratedGradients(chosen_logit).attribute(
        source,
        baselines=torch.zeros_like(source),
        additional_forward_args=(torch.arange(rows), torch.tensor(targets)),
        n_steps=n_steps,
        return_convergence_delta=True,
    )
    return attributions.sum(-1).tolist(), delta.abs().tolist()


def test_the_shared_path_equals_captum_s_integrated_gradients_row_by_row(loaded):
    """One forward per path point for every output equals Captum's run of every (output, point) pair apart: the
    same Gauss-Legendre points and weights, the same attributions and deltas."""
    found = source_attribution(loaded, SOURCE, max_new_tokens=6, n_steps=16, internal_batch_size=5)
    expected, deltas = captum_rows(loaded, n_steps=16)
    torch.testing.assert_close(torch.tensor(found.integrated_gradients), torch.tensor(expected), atol=1e-4, rtol=1e-4)
    assert found.convergence_delta == pytest.approx(max(deltas), abs=1e-4)
