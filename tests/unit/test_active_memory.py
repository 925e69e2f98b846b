"""The active memory family (paper 001): the CGRU against a hand computation,
every step captured with its index, the Extended decoder's tape, batch
invariance, and the state lesions."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from inference.core.decoding import pad_batch
from inference.core.interventions import Interventions
from inference.core.tracing import encode_sources, run_with_trace
from inference.families.active_memory.cgru import CGRU, cutoff_sigmoid
from inference.families.active_memory.lesions import ClampGate, EditState, EncoderSteps
from inference.families.active_memory.model import VARIANTS, ActiveMemoryConfig, ActiveMemoryModel
from tests.conftest import make_tiny_active_memory

SOURCE = "ein Hund spielt im Park"


def test_cutoff_sigmoid_is_clipped_and_scaled():
    x = torch.tensor([-10.0, -math.log(11), 0.0, 1.0, math.log(11), 3.0])
    expected = [0.0, 0.0, 0.5, 1.2 / (1 + math.exp(-1.0)) - 0.1, 1.0, 1.0]
    assert cutoff_sigmoid(x).tolist() == pytest.approx(expected, abs=1e-6)
    assert cutoff_sigmoid(torch.tensor([-3.0, 3.0])).tolist() == [0.0, 1.0]  # exactly, unlike a sigmoid


def test_one_cgru_step_matches_a_hand_computation():
    """One map, width 1, length 3, kernel 1x3: every convolution written out with zero padding."""
    layer = CGRU(maps=1, kernel_width=1, kernel_length=3)
    w_u, w_r, w_c = [0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-0.75, 1.0, 0.3]
    b_u, b_r, b_c = 0.1, -0.2, 0.05
    with torch.no_grad():
        layer.gates.weight.copy_(torch.tensor([[[w_u]], [[w_r]]]))
        layer.gates.bias.copy_(torch.tensor([b_u, b_r]))
        layer.candidate.weight.copy_(torch.tensor([[[w_c]]]))
        layer.candidate.bias.copy_(torch.tensor([b_c]))
    s = [0.8, -0.4, 1.2]

    def conv(w, x, bias, k):  # SAME padding: positions outside are 0
        return bias + sum(w[j] * x[k + j - 1] for j in range(3) if 0 <= k + j - 1 < 3)

    def sig(x):
        return min(max(1.2 / (1 + math.exp(-x)) - 0.1, 0.0), 1.0)

    u = [sig(conv(w_u, s, b_u, k)) for k in range(3)]
    r = [sig(conv(w_r, s, b_r, k)) for k in range(3)]
    rs = [r[k] * s[k] for k in range(3)]
    expected = [u[k] * s[k] + (1 - u[k]) * math.tanh(conv(w_c, rs, b_c, k)) for k in range(3)]
    out = layer(torch.tensor(s).view(1, 1, 1, 3))
    assert out.view(-1).tolist() == pytest.approx(expected, abs=1e-6)


@pytest.fixture
def extended(tiny_tokenizer):
    return make_tiny_active_memory(tiny_tokenizer, "extended")


def test_every_step_is_captured_with_its_index(extended):
    trace = run_with_trace(extended, SOURCE, max_new_tokens=6)
    n = encode_sources(extended, [SOURCE]).shape[1]
    length = extended.config.state_length(n)
    outputs = len(trace.output_ids[0]) + 1  # the decoder ran one step per output and the EOS, or to the cap
    encoder = trace.captures["encoder.layers.1.state"]
    assert [call.index["step"] for call in encoder.calls] == list(range(length))
    decoder_steps = [call.index["step"] for call in trace.captures["decoder.layers.0.update_gate"].calls]
    assert decoder_steps == list(range(length, length + len(decoder_steps)))
    assert len(decoder_steps) >= min(outputs, 7)
    assert encoder.at(step=0).shape == (1, 8, 3, length)
    assert len(trace.tokens["state"][0]) == length and trace.roles["state"][0][n:] == ["pad"] * (length - n)
    # consecutive steps differ: the state is rewritten every step
    assert not torch.equal(encoder.at(step=0), encoder.at(step=1))


def test_the_tape_holds_what_was_emitted(extended):
    trace = run_with_trace(extended, SOURCE, max_new_tokens=6)
    model = extended.model
    tape = trace.captures["decoder.tape"]
    first = tape.index_values("step")[0]
    emitted = trace.output_ids[0]
    for k, step in enumerate(tape.index_values("step")):
        row = tape.at(step=step)[0, :, 0, :]  # [m, length]
        for j in range(k):
            token = emitted[j] if j < len(emitted) else extended.config.eos_id
            assert torch.allclose(row[:, j], model.output_embed.weight[token].detach()), (step - first, j)
        assert not row[:, k:].any()  # nothing written at or after the current output
        assert not tape.at(step=step)[0, :, 1:, :].any()  # only the first row is a tape


@pytest.mark.parametrize("variant", VARIANTS)
def test_teacher_forcing_on_its_own_output_gives_its_logits(tiny_tokenizer, variant):
    loaded = make_tiny_active_memory(tiny_tokenizer, variant)
    src_ids = encode_sources(loaded, [SOURCE])
    tokens, logits = loaded.model.greedy(src_ids, 8)
    tgt_in = torch.cat([torch.tensor([[loaded.config.bos_id]]), tokens[:, :-1]], dim=1)
    with torch.no_grad():
        forced = loaded.model(src_ids, tgt_in)
    assert torch.allclose(forced, logits, atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_translation_does_not_depend_on_its_batch(tiny_tokenizer, variant):
    loaded = make_tiny_active_memory(tiny_tokenizer, variant)
    family = loaded.family
    sources = [SOURCE, "zwei Frauen lesen", "ein Buch"]
    rows = loaded.tokenizer.encode_sources(sources)
    together = family.translate(loaded.model, pad_batch(rows, 0), None, 10, 0)
    alone = [family.translate(loaded.model, pad_batch([row], 0), None, 10, 0)[0] for row in rows]
    assert together == alone
    assert together == run_with_trace(loaded, sources[0], max_new_tokens=10).output_ids[:1] + together[1:]


def test_no_intervention_changes_nothing_and_a_clamped_update_gate_freezes_the_state(extended):
    plain = run_with_trace(extended, SOURCE, max_new_tokens=4)
    again = run_with_trace(extended, SOURCE, max_new_tokens=4, interventions=Interventions())
    assert torch.equal(plain.logits, again.logits)
    frozen = run_with_trace(
        extended, SOURCE, max_new_tokens=4, interventions=Interventions.of(ClampGate(gate="update", value=1.0))
    )
    s0 = frozen.tensor("input")
    for step in frozen.captures["encoder.layers.1.state"].index_values("step"):
        assert torch.equal(frozen.tensor("encoder.layers.1.state", step=step), s0)
    assert not torch.equal(frozen.logits[:, :1], plain.logits[:, :1])


def test_a_zeroed_region_stays_zero_and_a_frozen_one_keeps_its_value(extended):
    zero = Interventions.of(EditState(mode="zero", from_step=2, start=1, stop=3))
    trace = run_with_trace(extended, SOURCE, max_new_tokens=3, interventions=zero)
    states = trace.captures["encoder.layers.1.state"]
    assert states.at(step=1)[..., 1:3].abs().sum() > 0
    for step in states.index_values("step")[2:]:
        assert not states.at(step=step)[..., 1:3].any()
        assert states.at(step=step)[..., 3:].any()
    freeze = Interventions.of(EditState(mode="freeze", from_step=2, start=0, stop=2))
    trace = run_with_trace(extended, SOURCE, max_new_tokens=3, interventions=freeze)
    states = trace.captures["encoder.layers.1.state"]
    before = states.at(step=1)[..., 0:2]
    for step in states.index_values("step")[2:]:
        assert torch.equal(states.at(step=step)[..., 0:2], before)
    assert not torch.equal(states.at(step=3)[..., 2:], states.at(step=1)[..., 2:])


def test_fewer_encoder_steps_stop_the_encoder_but_not_the_decoder(extended):
    trace = run_with_trace(extended, SOURCE, max_new_tokens=3, interventions=Interventions.of(EncoderSteps(steps=2)))
    states = trace.captures["encoder.layers.1.state"]
    after_two = states.at(step=1)
    assert all(torch.equal(states.at(step=s), after_two) for s in states.index_values("step")[2:])
    decoder = trace.captures["decoder.layers.1.state"]
    steps = decoder.index_values("step")
    assert not torch.equal(decoder.at(step=steps[0]), after_two)


def test_a_region_outside_the_state_is_refused(extended):
    with pytest.raises(ValueError, match="the state has"):
        run_with_trace(extended, SOURCE, interventions=Interventions.of(EditState(mode="zero", start=500)))


def test_sources_of_different_lengths_are_not_traced_together(extended):
    with pytest.raises(ValueError, match="one length"):
        run_with_trace(extended, [SOURCE, "ein Buch"])


def relaxed_neural_gpu(sets: int) -> ActiveMemoryModel:
    """A Neural GPU whose weight sets start shared, then drawn apart as training would (noise on sets 1..r-1)."""
    torch.manual_seed(0)
    model = ActiveMemoryModel(ActiveMemoryConfig(variant="neural_gpu", vocab_size=8, maps=3, width=2, n_layers=2,
                                                 relaxed_sets=sets)).eval()  # fmt: skip
    assert model.relaxation_distance().item() < 1e-12  # the mean of equal weights, up to rounding
    with torch.no_grad():
        for weight in model.encoder.relaxed.parameters():
            weight.add_(0.3 * torch.randn_like(weight))
    return model


def test_relaxed_sharing_runs_step_t_on_weight_set_t_mod_r():
    """Three sets, five steps: the encoder's state is the one got by applying set 0, 1, 2, 0, 1 by hand."""
    model = relaxed_neural_gpu(3)
    source = torch.tensor([[3, 4, 5, 2]])  # [b, n]
    sets = [model.encoder.layers, *model.encoder.relaxed]
    first_row = model.embed(source).transpose(1, 2)  # [1, m, 4]
    state = torch.cat([F.pad(first_row, (0, 1)).unsqueeze(2), torch.zeros(1, 3, 1, 5)], dim=2)  # [1, m, w, 5]
    for step in range(5):
        for layer in sets[step % 3]:
            state = layer(state)
    assert torch.equal(model.encode(source, 5), state)
    assert not torch.allclose(model.encode(source, 5), relaxed_neural_gpu(1).encode(source, 5))


def test_the_relaxation_distance_and_the_shared_copy_are_the_sets_spread_and_mean():
    model = relaxed_neural_gpu(3)
    sets = [model.encoder.layers, *model.encoder.relaxed]
    expected = 0.0
    for weights in zip(*(dict(s.named_parameters()).values() for s in sets), strict=True):
        mean = (weights[0] + weights[1] + weights[2]) / 3
        expected += sum(((w - mean) ** 2).sum().item() for w in weights)
    assert model.relaxation_distance().item() == pytest.approx(expected, rel=1e-5)
    shared = model.shared_copy()
    assert shared.config.relaxed_sets == 1 and not shared.training
    gates = [s[1].gates.weight for s in sets]  # the second layer's U', U''
    assert torch.allclose(shared.encoder.layers[1].gates.weight, (gates[0] + gates[1] + gates[2]) / 3)
    assert torch.equal(shared.embed.weight, model.embed.weight)


def test_sets_pulled_together_make_a_shared_copy_that_computes_as_they_do():
    model = relaxed_neural_gpu(2)
    with torch.no_grad():
        for ours, theirs in zip(model.encoder.relaxed[0].parameters(), model.encoder.layers.parameters()):
            ours.copy_(theirs)
    source = torch.tensor([[3, 4, 5, 2]])
    assert model.relaxation_distance().item() < 1e-12  # the mean of equal weights, up to rounding
    assert torch.allclose(model.shared_copy().encode(source, 6), model.encode(source, 6), atol=1e-6)
