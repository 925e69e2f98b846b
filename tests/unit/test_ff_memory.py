"""FF layers as key-value memories (paper 003): values, trigger mining, agreement, aggregation (what the FF page
prints of them: test_ff_views.py)."""

import json

import pytest
import torch

from inference.analyses.ff_aggregation import (
    CASES,
    ff_aggregation,
    logit_lens,
    prediction_cases,
    summarise_aggregation,
)
from inference.analyses.ff_agreement import key_value_agreement
from inference.analyses.ff_effects import key_effects, margin_gradients
from inference.analyses.ff_mining import MiningState, TriggerStore, TriggerTokens, add_batch
from inference.analyses.ff_values import value_logits, value_projections
from inference.core.axes import TokenAxis
from inference.core.family import capabilities_of
from inference.core.ff_memories import FFMemories, decoder_ff_memories
from inference.core.interventions import Interventions, scale_ff_keys
from inference.core.trace import Call, Capture, Role, RunRecord, Trace
from inference.core.tracing import run_with_trace
from inference.corpus_jobs.states import mine_triggers
from inference.runs.trigger_mining import compact_triggers, prefix_stream, trigger_tokens
from tests.conftest import SOURCES, TINY_CORPUS, make_tiny, tiny_config

TARGETS = ["a dog plays in the park", "two women read"]
PAIRS = list(zip(TINY_CORPUS[0::2], TINY_CORPUS[1::2])) + list(zip(SOURCES, TARGETS))  # 6 (German, English) pairs
CORPUS_SOURCES = [source for source, _ in PAIRS]
CORPUS_TEXTS = [target for _, target in PAIRS]
LAYER0 = "decoder.layers.0.ff"
PLANTED_KEY = 5


def planted_model(tokenizer, token: int):
    """A tiny transformer whose decoder key PLANTED_KEY of layer 0 fires
    exactly where the decoder input is `token`: layer 0's attention outputs
    are zeroed, so its FF input is the normalised embedding (plus position),
    and `token` alone owns embedding coordinate 0, which the key reads."""
    loaded = make_tiny("transformer", tokenizer)
    model = loaded.model
    with torch.no_grad():
        layer = model.decoder.layers[0]
        for attn in (layer.self_attn, layer.cross_attn):
            attn.out_proj.weight.zero_()
            attn.out_proj.bias.zero_()
        model.embed.weight[:, 0] = 0
        model.embed.weight[token] = 0
        model.embed.weight[token, 0] = 3.0  # after LN about 3.8 on coordinate 0; other tokens stay below 1
        layer.ff.w_in.weight[PLANTED_KEY] = 0
        layer.ff.w_in.weight[PLANTED_KEY, 0] = 1.0
        layer.ff.w_in.bias[PLANTED_KEY] = -2.0
    return loaded


def test_mining_finds_the_planted_key_one_prefix_per_sentence(tiny_tokenizer):
    token = tiny_tokenizer.encode("a")[0]
    planted = planted_model(tiny_tokenizer, token)
    streams = [prefix_stream(planted, text) for text in CORPUS_TEXTS]
    assert streams[0] == [tiny_tokenizer.bos_id, *tiny_tokenizer.encode(CORPUS_TEXTS[0]), tiny_tokenizer.eos_id]
    holding = {s: [p for p, t in enumerate(stream[:-1]) if t == token] for s, stream in enumerate(streams)}
    assert sorted(len(h) for h in holding.values()) == [0, 0, 0, 1, 1, 2]  # "a woman reads a book" has it twice

    state = mine_triggers(planted, CORPUS_TEXTS, CORPUS_SOURCES, batch_size=4, top_k=4)

    fired = state.coefficients[LAYER0][PLANTED_KEY] > 0  # [top_k]
    sentences = state.sentences[LAYER0][PLANTED_KEY][fired].tolist()
    positions = state.positions[LAYER0][PLANTED_KEY][fired].tolist()
    assert sorted(sentences) == [s for s, h in holding.items() if h]  # every sentence with the token, once
    assert all(p in holding[s] for s, p in zip(sentences, positions))
    tokens = trigger_tokens(state, planted, CORPUS_TEXTS)[LAYER0]
    assert tokens.trigger[PLANTED_KEY, : len(sentences)].tolist() == [token] * len(sentences)
    assert tokens.next[PLANTED_KEY, : len(sentences)].tolist() == [
        streams[s][p + 1] for s, p in zip(sentences, positions)
    ]
    assert (tokens.next[PLANTED_KEY, len(sentences) :] == -1).all()


def test_compact_record_is_json_and_keeps_the_triggers(tiny_tokenizer):
    token = tiny_tokenizer.encode("a")[0]
    planted = planted_model(tiny_tokenizer, token)
    state = mine_triggers(planted, CORPUS_TEXTS, CORPUS_SOURCES, batch_size=4, top_k=4)

    compact = json.loads(json.dumps(compact_triggers(state, planted, CORPUS_TEXTS, context_tokens=3)))

    store = TriggerStore(compact)
    triggers = store.triggers(LAYER0, PLANTED_KEY)
    streams = [prefix_stream(planted, text) for text in CORPUS_TEXTS]
    assert [t.sentence for t in triggers] == state.sentences[LAYER0][PLANTED_KEY][: len(triggers)].tolist()
    assert [(t.sentence, t.position) for t in triggers] == [(0, 1), (2, 1), (4, 1)]  # the texts starting "a", there
    for t in triggers:
        stream = streams[t.sentence]
        assert t.context == tiny_tokenizer.display_tokens(stream[max(0, t.position - 2) : t.position + 1])
        assert t.context[-1] == "a"
        assert t.next_token == tiny_tokenizer.display_tokens([stream[t.position + 1]])[0]
        assert t.truncated == (t.position >= 3)
    from_corpus = trigger_tokens(state, planted, CORPUS_TEXTS)
    assert store.top_coefficients(LAYER0)[PLANTED_KEY] == pytest.approx(
        state.coefficients[LAYER0][PLANTED_KEY, 0].item(), rel=1e-3
    )
    assert list(store.trigger_tokens()) == list(from_corpus) == [LAYER0, "decoder.layers.1.ff"]
    for layer, tokens in store.trigger_tokens().items():
        assert torch.equal(tokens.trigger, from_corpus[layer].trigger)
        assert torch.equal(tokens.next, from_corpus[layer].next)


def test_mining_state_round_trips_and_resumes(tiny_tokenizer, tmp_path):
    tiny = make_tiny("transformer", tiny_tokenizer)
    whole = mine_triggers(tiny, CORPUS_TEXTS, CORPUS_SOURCES, batch_size=2, top_k=3)

    saved = []
    first_half = mine_triggers(tiny, CORPUS_TEXTS[:4], CORPUS_SOURCES[:4], batch_size=2, top_k=3, on_batch=saved.append)
    assert [s.sentences_consumed for s in saved] == [2, 4]
    first_half.save(tmp_path / "state.pt")
    torch.load(tmp_path / "state.pt", weights_only=True)  # plain tensors and numbers only
    resumed = mine_triggers(
        tiny, CORPUS_TEXTS, CORPUS_SOURCES, state=MiningState.load(tmp_path / "state.pt"), batch_size=2
    )

    assert resumed.sentences_consumed == whole.sentences_consumed == len(PAIRS)
    for field in ("coefficients", "sentences", "positions"):
        for layer, tensor in getattr(whole, field).items():
            assert torch.equal(getattr(resumed, field)[layer], tensor), (field, layer)
    for layer, sentences in whole.sentences.items():  # at most one entry per sentence per key
        assert all(len(set(row)) == len(row) for row in sentences.tolist()), layer


def test_ties_go_to_earlier_sentences_whatever_the_batches():
    peaks = torch.tensor(
        [0.5, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0]
    )  # one key's peak per sentence; ReLU keys tie at 0 a lot
    keys = peaks[:, None, None].expand(-1, 2, 3)  # [8 sentences, t 2, d_ff 3]: the same peak at both positions
    lengths = [2] * 8
    for split in ([8], [2, 2, 2, 2], [3, 5], [1, 7]):
        state, start = MiningState.empty({"ff": 3}, top_k=4), 0
        for size in split:
            state = add_batch(state, {"ff": keys[start : start + size]}, lengths[start : start + size])
            start += size
        assert state.sentences["ff"].tolist() == [[0, 3, 1, 2]] * 3, split
        assert state.positions["ff"].tolist() == [[0, 0, 0, 0]] * 3, split


def test_agreement_on_constructed_values_and_triggers():
    vocab = 6
    top = torch.tensor([0, 1, 2, 3])  # each value's top token
    logits = {"layer": torch.nn.functional.one_hot(top, vocab).float()}  # [d_ff 4, vocab]
    triggers = {
        "layer": TriggerTokens(
            trigger=torch.tensor([[5, 5], [1, 5], [-1, -1], [5, -1]]),
            next=torch.tensor(
                [[0, 4], [4, 1], [-1, -1], [3, -1]]
            ),  # keys 0, 3 agree on the top trigger, key 1 only on its second, key 2 never fired
        )
    }

    (result,) = key_value_agreement(logits, triggers)

    assert result.keys_with_triggers == 3
    assert result.agreement == pytest.approx(2 / 3)
    assert result.any_trigger_agreement == pytest.approx(1.0)
    assert result.trigger_token_agreement == pytest.approx(1 / 3)
    assert result.ranks.tolist() == [0, 1, -1, 0]
    assert result.baseline_ranks[2] == -1


def test_agreement_is_zero_when_no_value_points_at_its_next_token():
    top = torch.arange(8)
    logits = {"layer": torch.nn.functional.one_hot(top, 10).float()}
    triggers = {"layer": TriggerTokens(trigger=top[:, None], next=((top + 1) % 10)[:, None])}

    (result,) = key_value_agreement(logits, triggers)

    assert result.agreement == 0.0
    assert (result.ranks == 1).all()


def test_baseline_pairs_values_with_other_keys():
    top = torch.arange(40)
    logits = {"layer": torch.nn.functional.one_hot(top, 40).float()}
    triggers = {"layer": TriggerTokens(trigger=top[:, None], next=top[:, None])}  # every key agrees with its own value

    (result,) = key_value_agreement(logits, triggers, seed=0)
    (again,) = key_value_agreement(logits, triggers, seed=0)

    assert result.agreement == 1.0
    assert result.baseline_agreement < 0.2  # a random pairing agrees only at its fixed points
    assert torch.equal(result.baseline_ranks, again.baseline_ranks)


def test_zeroing_a_key_removes_exactly_its_contribution(tiny_tokenizer):
    tiny = make_tiny("transformer", tiny_tokenizer)
    names = [f"{LAYER0}.keys", f"{LAYER0}.out"]
    plain = run_with_trace(tiny, SOURCES, TARGETS, names=names)
    key = int(plain.tensor(f"{LAYER0}.keys").sum(dim=(0, 1)).argmax())  # an active key
    lesion = Interventions.of(scale_ff_keys(LAYER0, (key,), 0.0))
    zeroed = run_with_trace(tiny, SOURCES, TARGETS, names=names, interventions=lesion)

    m = plain.tensor(f"{LAYER0}.keys")[..., key]  # [b, t]
    value = decoder_ff_memories(tiny.model).values[LAYER0][key]  # [d]
    change = plain.tensor(f"{LAYER0}.out") - zeroed.tensor(f"{LAYER0}.out")  # [b, t, d]
    assert m.abs().max() > 0.1
    torch.testing.assert_close(change, m[..., None] * value, atol=1e-5, rtol=1e-5)
    others = [k for k in range(m.shape[-1]) if k != key]
    assert torch.equal(plain.tensor(f"{LAYER0}.keys")[..., others], zeroed.tensor(f"{LAYER0}.keys")[..., others])


def test_value_projections_are_the_softmax_of_values_through_the_embedding(tiny_tokenizer):
    memories = decoder_ff_memories(make_tiny("transformer", tiny_tokenizer).model)
    projections = value_projections(memories, top_k=3)

    assert [p.layer for p in projections] == ["decoder.layers.0.ff", "decoder.layers.1.ff"]
    first = projections[0]
    direct = (memories.values[LAYER0][7] @ memories.output_embedding.T).softmax(dim=-1)  # [vocab]
    assert first.token_ids.shape == (32, 3)
    assert first.token_ids[7, 0] == direct.argmax()
    torch.testing.assert_close(first.probabilities[7], direct.sort(descending=True).values[:3])


def test_aggregation_on_a_tiny_model(tiny_tokenizer):
    tiny = make_tiny("transformer", tiny_tokenizer)
    memories = decoder_ff_memories(tiny.model)
    trace = run_with_trace(tiny, SOURCES, TARGETS, names=memories.capture_hooks() + ["decoder.out"])

    aggregation = ff_aggregation(trace, memories)

    real = sum(role != "pad" for roles in trace.roles["dec"] for role in roles)
    assert len(aggregation.final_top) == real
    last = aggregation.layers[-1]
    assert torch.equal(last.output_top, aggregation.final_top)  # the last layer output is what E reads
    keys = trace.tensor(f"{LAYER0}.keys")[aggregation.examples, aggregation.positions]
    assert torch.equal(aggregation.layers[0].active_memories, (keys > 0).sum(dim=-1))
    (summary0, summary1) = summarise_aggregation([aggregation, aggregation])
    assert summary1.predictions == 2 * real
    assert summary0.residual_wins + summary0.ff_wins + summary0.all_agree + summary0.composition == pytest.approx(1.0)
    assert summary1.residual_agrees_with_final == pytest.approx(
        (last.residual_top == aggregation.final_top).double().mean().item()
    )


def test_prediction_cases():
    residual = torch.tensor([1, 1, 1, 1, 1])
    ff = torch.tensor([2, 1, 1, 2, 1])
    output = torch.tensor([1, 2, 1, 3, 4])
    wanted = ["residual_wins", "composition", "all_agree", "composition", "composition"]
    assert prediction_cases(residual, ff, output).tolist() == [CASES.index(c) for c in wanted]
    assert prediction_cases(torch.tensor([1]), torch.tensor([2]), torch.tensor([2])).tolist() == [
        CASES.index("ff_wins")
    ]


def hand_built(ff_out: torch.Tensor, keys: torch.Tensor) -> tuple[Trace, FFMemories]:
    """One example, positions as rows; vocab = d = 3, E = identity, two
    values pointing at tokens 0 and 1; the layer output is r + y."""
    t = ff_out.shape[0]
    memories = FFMemories(
        ["dec.layers.0.ff"],
        {"dec.layers.0.ff": torch.eye(3)[:2] * torch.tensor([[1.0], [2.0]])},
        torch.eye(3),
        lambda layer, r, y: r + y,
    )
    tensors = {
        "dec.layers.0.ff.keys": (keys[None], "batch position ff_key"),
        "dec.layers.0.ff.out": (ff_out[None], "batch position d_model"),
        "dec.layers.0.resid_mid": (torch.zeros(1, t, 3), "batch position d_model"),
    }
    captures = {
        name: Capture(
            name, tuple(dims.split()), {"position": TokenAxis("dec")}, "hand-built", [Call({"call": 0}, tensor)]
        )
        for name, (tensor, dims) in tensors.items()
    }
    config = tiny_config("transformer", vocab_size=3)
    run = RunRecord("hand-built", config.family, capabilities_of(config), config, Interventions(), 0, None)
    trace = Trace(
        run, captures, {"dec": [["x"] * t]}, {"dec": [[Role.TGT] * t]}, ["src"], [[3] * t], ["x"], ff_out[None]
    )
    return trace, memories


def test_zero_agreement_compares_active_values_with_the_ff_output():
    ff_out = torch.tensor([[1.0, 0.5, 0.0], [0.2, 0.3, 1.0], [0.0, 2.0, 0.0], [0.0, 2.0, 0.0]])  # tops 0, 2, 1, 1
    keys = torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0], [1.0, 0.2]])  # value 1 (top 1) inactive at row 2

    (layer,) = ff_aggregation(*hand_built(ff_out, keys)).layers
    (top_one,) = ff_aggregation(*hand_built(ff_out, keys), top_memories=1).layers

    assert layer.zero_agreement.tolist() == [False, True, True, False]
    assert layer.active_memories.tolist() == [1, 2, 1, 2]
    # By m_i ||v_i|| row 3 ranks value 0 (1.0 x 1) above value 1 (0.2 x 2 = 0.4), so one memory misses.
    assert top_one.zero_agreement.tolist() == [False, True, True, True]


def test_logit_lens_of_one_example(tiny_tokenizer):
    tiny = make_tiny("transformer", tiny_tokenizer)
    memories = decoder_ff_memories(tiny.model)
    trace = run_with_trace(tiny, SOURCES, TARGETS, names=memories.capture_hooks())

    lens = logit_lens(trace, memories, example=1, top_keys=4, top_tokens=3)

    t = len(tiny_tokenizer.encode(TARGETS[1])) + 1
    assert lens.tokens == trace.tokens["dec"][1][:t]
    assert [layer.key_indices.shape for layer in lens.layers] == [(t, 4), (t, 4)]
    assert torch.equal(lens.layers[-1].output_tokens[:, 0], trace.logits[1, :t].argmax(dim=-1))
    scores = trace.tensor(f"{LAYER0}.keys")[1, :t] * memories.values[LAYER0].norm(dim=-1)  # [t, d_ff]
    torch.testing.assert_close(lens.layers[0].key_scores[:, 0], scores.max(dim=-1).values)
    assert torch.equal(
        lens.layers[0].key_value_tokens, value_logits(memories, LAYER0).argmax(dim=-1)[lens.layers[0].key_indices]
    )


def test_key_effects_are_each_keys_largest_direct_share_of_a_predictions_margin():
    """E = identity and the layer output r + y with r = 0, so the logits are the FF output. Row 0: token 0 (1.0)
    beats token 1 (0.5) by 0.5; key 0 (m 1.0, value e0) gives 1.0 of it: share 2.0; key 1 is silent. Row 1:
    token 2 (1.0) beats token 1 (0.3) by 0.7; key 1 (m 1.0, value 2 e1) argues for the runner-up: -2 / 0.7."""
    ff_out = torch.tensor([[1.0, 0.5, 0.0], [0.2, 0.3, 1.0]])
    keys = torch.tensor([[1.0, 0.0], [0.5, 1.0]])
    trace, memories = hand_built(ff_out, keys)
    margins, _ = margin_gradients(trace, memories)
    assert margins.tolist() == pytest.approx([0.5, 0.7])
    effects = key_effects(trace, memories, "dec.layers.0.ff")
    assert effects.tolist() == pytest.approx([2.0, 0.0])  # key 1: max(0 at row 0, -2.857 at row 1)
    keys[0, 1] = 0.5  # key 1 now also fires at row 0, where its value (2 e1) lifts the runner-up: -2.0
    assert key_effects(*hand_built(ff_out, keys), "dec.layers.0.ff").tolist() == pytest.approx([2.0, -2.0])
