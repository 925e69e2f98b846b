"""FF memories of the language model: its trace, its logit lens through the
final LayerNorm, trigger mining on corpus sentences, and key interventions."""

from __future__ import annotations

import pytest
import torch

from inference.analyses.ff_aggregation import ff_aggregation, logit_lens
from inference.analyses.ff_values import ff_memories
from inference.core.continuation import greedy_continuation
from inference.core.family import LoadedModel
from inference.core.ff_memories import language_model_ff_memories
from inference.core.interventions import Interventions, scale_ff_keys
from inference.core.tracing import run_with_trace
from inference.corpus_jobs.states import mine_triggers
from inference.families.language_model.model import AXIS
from inference.runs.trigger_mining import prefix_stream, trigger_tokens
from tests.conftest import TINY_CORPUS, make_tiny_language_model

TEXTS = TINY_CORPUS[1::2]  # the English side: 3 sentences
LAYER0 = "layers.0.ff"
PLANTED_KEY = 3


@pytest.fixture
def tiny_lm(tiny_tokenizer) -> LoadedModel:
    return LoadedModel("tiny-lm", make_tiny_language_model(tiny_tokenizer), tiny_tokenizer)


def test_a_trace_reads_eos_text_and_its_greedy_continuation(tiny_lm, tiny_tokenizer):
    trace = run_with_trace(tiny_lm, TEXTS[:2], max_new_tokens=4)

    for example, text in enumerate(TEXTS[:2]):
        prompt = [tiny_tokenizer.eos_id, *tiny_tokenizer.encode(text)]
        continuation = greedy_continuation(tiny_lm.model, prompt, 4)
        roles = [r for r in trace.roles["tok"][example] if r != "pad"]
        assert roles == ["special"] + ["text"] * (len(prompt) - 1) + ["generated"] * len(continuation)
        assert trace.output_ids[example] == prompt[1:] + continuation
        assert trace.outputs[example] == tiny_tokenizer.decode(continuation)
    ids = torch.tensor([[tiny_tokenizer.eos_id, *trace.output_ids[0]]])
    n = ids.shape[1]
    torch.testing.assert_close(trace.logits[0, :n], tiny_lm.model(ids)[0])


def test_a_language_model_takes_no_target(tiny_lm):
    with pytest.raises(ValueError, match="without a target"):
        run_with_trace(tiny_lm, TEXTS[0], TEXTS[1])
    with pytest.raises(ValueError, match="empty"):
        run_with_trace(tiny_lm, "   ")


def test_the_last_layer_output_read_through_the_final_norm_is_the_prediction(tiny_lm):
    memories = ff_memories(tiny_lm.model)
    assert memories.layers == ["layers.0.ff", "layers.1.ff"] and memories.axis == "tok"
    trace = run_with_trace(tiny_lm, TEXTS, names=memories.capture_hooks(), max_new_tokens=0)

    aggregation = ff_aggregation(trace, memories)

    assert torch.equal(aggregation.layers[-1].output_top, aggregation.final_top)
    lens = logit_lens(trace, memories, example=0, top_keys=3, top_tokens=2)
    t = len(lens.tokens)
    assert torch.equal(lens.layers[-1].output_tokens[:, 0], trace.logits[0, :t].argmax(dim=-1))
    # The lens reads a stream state through the final LayerNorm, as the model reads its last layer.
    r = trace.tensor("layers.1.resid_mid")[0, :t]  # [t, d]
    expected = tiny_lm.model.final_norm(r) @ tiny_lm.model.embed.weight.T  # [t, vocab]
    assert torch.equal(lens.layers[1].residual_tokens[:, 0], expected.argmax(dim=-1))


def planted_language_model(tokenizer, token: int) -> LoadedModel:
    """A tiny language model whose layer-0 key PLANTED_KEY fires exactly
    where the input is `token`: layer 0's attention output is zeroed, so its
    FF reads LN(embedding + position), and `token` alone owns embedding
    coordinate 0, which the key reads."""
    model = make_tiny_language_model(tokenizer)
    with torch.no_grad():
        layer = model.layers[0]
        layer.attn.out_proj.weight.zero_()
        layer.attn.out_proj.bias.zero_()
        model.embed.weight[:, 0] = 0
        model.embed.weight[token] = 0
        model.embed.weight[token, 0] = 3.0
        layer.ff.w_in.weight[PLANTED_KEY] = 0
        layer.ff.w_in.weight[PLANTED_KEY, 0] = 1.0
        layer.ff.w_in.bias[PLANTED_KEY] = -2.0
    return LoadedModel("planted-lm", model, tokenizer)


def test_mining_a_language_model_finds_the_planted_key(tiny_tokenizer):
    token = tiny_tokenizer.encode("a")[0]
    planted = planted_language_model(tiny_tokenizer, token)
    streams = [prefix_stream(planted, text) for text in TEXTS]
    assert streams[0] == [tiny_tokenizer.eos_id, *tiny_tokenizer.encode(TEXTS[0])]
    holding = {
        s: [p for p, t in enumerate(stream[:-1]) if t == token] for s, stream in enumerate(streams)
    }  # a prefix needs a next token
    assert any(holding.values())

    state = mine_triggers(planted, TEXTS, batch_size=2, top_k=3)

    fired = state.coefficients[LAYER0][PLANTED_KEY] > 0
    sentences = state.sentences[LAYER0][PLANTED_KEY][fired].tolist()
    assert sorted(sentences) == [s for s, h in holding.items() if h]
    assert all(p in holding[s] for s, p in zip(sentences, state.positions[LAYER0][PLANTED_KEY][fired].tolist()))
    tokens = trigger_tokens(state, planted, TEXTS)[LAYER0]
    assert tokens.trigger[PLANTED_KEY, : len(sentences)].tolist() == [token] * len(sentences)


def test_zeroing_a_language_model_key_removes_exactly_its_contribution(tiny_lm):
    names = [f"{LAYER0}.keys", f"{LAYER0}.out"]
    plain = run_with_trace(tiny_lm, TEXTS, names=names, max_new_tokens=0)
    key = int(plain.tensor(f"{LAYER0}.keys").sum(dim=(0, 1)).argmax())
    lesion = Interventions.of(scale_ff_keys(LAYER0, (key,), 0.0))
    zeroed = run_with_trace(tiny_lm, TEXTS, names=names, interventions=lesion, max_new_tokens=0)

    m = plain.tensor(f"{LAYER0}.keys")[..., key]  # [b, t]
    value = language_model_ff_memories(tiny_lm.model, AXIS).values[LAYER0][key]  # [d]
    torch.testing.assert_close(
        plain.tensor(f"{LAYER0}.out") - zeroed.tensor(f"{LAYER0}.out"), m[..., None] * value, atol=1e-5, rtol=1e-5
    )
