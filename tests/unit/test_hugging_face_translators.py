"""The Hugging Face translators on tiny random T5 and Marian folders (tests/hugging_face_models.py): they open
through the checkpoint registry as translators, our captures and logits equal what Hugging Face computes itself,
our greedy output is Hugging Face's own `generate`, beam search keeps its promise, a head ablation and an FF key edit
act as plain torch hooks on the same modules do, and the FF memories read the right weights (Marian's final logits
bias included). Offline."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from inference.core.axes import TokenAxis
from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointRegistry, load_checkpoint
from inference.core.decoding import Decoding, pad_batch
from inference.core.family import LoadedModel, capabilities_of
from inference.core.hooks import hook_points
from inference.core.interventions import Interventions, ablate_head, scale_ff_keys
from inference.core.trace import Role
from inference.core.tracing import encode_sources, run_with_trace
from inference.families.hugging_face.folder import READER
from inference.runs.source_attribution import source_attribution
from tests.hugging_face_models import D_FF, D_MODEL, EOS, N_HEADS, N_LAYERS, PAD, TRANSLATORS, VOCAB_SIZE, build_folder

TEXTS = ["the cat saw a big dog in the city", "a king went to paris"]
ATOL = 1e-5
D_HEAD = D_MODEL // N_HEADS
# Where each architecture's modules sit, written out here rather than read from the family's tables.
MODULES = {
    "t5": {
        "cross_out_proj": "decoder.block.{i}.layer.1.EncDecAttention.o",
        "down_proj": "decoder.block.{i}.layer.2.DenseReluDense.wo",
        "embedding": "encoder.embed_tokens",
    },
    "marian": {
        "cross_out_proj": "model.decoder.layers.{i}.encoder_attn.out_proj",
        "down_proj": "model.decoder.layers.{i}.fc2",
        "embedding": "model.encoder.embed_tokens",
    },
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("translators")
    build_folder("t5", root / "t5")
    build_folder("marian", root / "marian", scale_embedding=True)
    build_folder("marian", root / "two_vocabularies", share_encoder_decoder_embeddings=False)
    return root


@pytest.fixture(scope="module")
def models(root: Path) -> dict[str, LoadedModel]:
    return {arch: load_checkpoint(root / arch, "cpu") for arch in TRANSLATORS}


def hf_logits(loaded: LoadedModel, src_ids: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
    """Hugging Face's own teacher-forced logits, its padding mask built here."""
    with torch.no_grad():
        return loaded.model.hf(
            input_ids=src_ids, attention_mask=(src_ids != PAD).long(), decoder_input_ids=tgt_in
        ).logits


def batch(loaded: LoadedModel) -> tuple[torch.Tensor, torch.Tensor]:
    src_ids = encode_sources(loaded, TEXTS)  # [2, n], the second source padded
    tgt_in = torch.tensor([[PAD, 30, 41, 12, 9], [PAD, 55, 7, PAD, PAD]])  # the decoder start, then targets
    return src_ids, tgt_in


def with_pre_hook(module: nn.Module, edit: Callable[[torch.Tensor], torch.Tensor], run: Callable[[], torch.Tensor]):
    """`run()` with `module`'s first input replaced by `edit(input)`: the plain torch way of an edit."""
    handle = module.register_forward_pre_hook(lambda _module, args: (edit(args[0]), *args[1:]))
    try:
        return run()
    finally:
        handle.remove()


def test_the_registry_opens_them_as_translators_and_refuses_two_vocabularies(root):
    registry = CheckpointRegistry(root, device="cpu")
    assert sorted(registry.available()) == ["marian", "t5"]
    assert "separate source and target vocabularies" in registry.broken()["two_vocabularies"]
    for arch in TRANSLATORS:
        config = registry.get(arch).config
        assert config.family == "hugging_face_translator" and config.model_type == arch
        assert (config.pad_id, config.bos_id, config.eos_id) == (PAD, PAD, EOS)  # outputs start from the pad token
        assert (config.n_encoder_layers, config.n_decoder_layers, config.d_ff) == (N_LAYERS, N_LAYERS, D_FF)
        assert capabilities_of(config) == {
            Capability.ATTENTION,
            Capability.TRANSLATES,
            Capability.BEAM_SEARCH,
            Capability.FF_KEYS,
            Capability.SOURCE_ATTRIBUTION,
        }
    assert registry.get("t5").config.max_positions == 512  # relative positions: MemLens's bound
    assert registry.get("marian").config.max_positions == 64


def test_an_unknown_model_type_names_every_supported_one(root):
    raw = {"model_type": "bart", "vocab_size": VOCAB_SIZE}
    with pytest.raises(ValueError, match="translators marian, t5") as refused:
        READER.config(root / "t5", raw)
    assert "gpt2, gpt_neox, llama" in str(refused.value)


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_hook_points_follow_the_translators_scheme(models, arch):
    points = hook_points(models[arch].model)
    encoder = ["resid_pre", "attn.pattern", "attn.z", "resid_mid", "ff.keys", "ff.out"]
    decoder = ["resid_pre", "self_attn.pattern", "self_attn.z", "cross_attn.pattern", "cross_attn.z", "resid_mid"]
    decoder += ["ff.keys", "ff.out"]
    assert list(points) == (
        [f"encoder.layers.{i}.{part}" for i in range(N_LAYERS) for part in encoder]
        + ["encoder.out"]
        + [f"decoder.layers.{i}.{part}" for i in range(N_LAYERS) for part in decoder]
        + ["decoder.out", "logits"]
    )
    cross = points["decoder.layers.1.cross_attn.pattern"]
    assert {axis: str(token) for axis, token in cross.positions.items()} == {"query": "dec", "key": "enc"}


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_logits_and_patterns_equal_hugging_face_s_own(models, arch):
    loaded = models[arch]
    src_ids, tgt_in = batch(loaded)
    with torch.no_grad():
        ours = loaded.model(src_ids, tgt_in)  # [2, 5, vocab]
    torch.testing.assert_close(ours, hf_logits(loaded, src_ids, tgt_in), atol=ATOL, rtol=0)
    trace = run_with_trace(loaded, TEXTS, targets=["cat dog", "big"], names=["*.pattern"])
    with torch.no_grad():
        theirs = loaded.model.hf(
            input_ids=src_ids, attention_mask=(src_ids != PAD).long(), decoder_input_ids=trace_tgt_in(trace),
            output_attentions=True,
        )  # fmt: skip
    for i in range(N_LAYERS):
        ours_cross = trace.captures[f"decoder.layers.{i}.cross_attn.pattern"].calls[0].tensor  # [2, h, t, n]
        torch.testing.assert_close(ours_cross, theirs.cross_attentions[i], atol=ATOL, rtol=0)
        ours_enc = trace.captures[f"encoder.layers.{i}.attn.pattern"].calls[0].tensor
        torch.testing.assert_close(ours_enc, theirs.encoder_attentions[i], atol=ATOL, rtol=0)
    padded = (src_ids[1] == PAD).nonzero().flatten()
    assert len(padded) > 0 and ours_cross[1][..., padded].abs().max() == 0  # padding is never read


def trace_tgt_in(trace) -> torch.Tensor:
    return pad_batch([[PAD, *ids] for ids in trace.output_ids], PAD)


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_the_trace_names_source_and_output_tokens_with_their_roles(models, arch):
    trace = run_with_trace(models[arch], TEXTS[1], targets="cat dog", names=["logits"])
    enc, dec = TokenAxis("enc"), TokenAxis("dec")
    assert trace.axis_tokens(enc, 0) == ["a", "king", "went", "to", "paris", "</s>"]
    assert trace.axis_roles(enc, 0) == [Role.SRC] * 5 + [Role.SPECIAL]
    assert trace.axis_tokens(dec, 0) == ["<pad>", "cat", "dog"]
    assert trace.axis_roles(dec, 0) == [Role.SPECIAL, Role.TGT, Role.TGT]


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_greedy_output_is_hugging_face_s_generate(models, arch):
    loaded = models[arch]
    for seed_text in TEXTS:
        ours = run_with_trace(loaded, seed_text, names=["logits"], max_new_tokens=12).output_ids[0]
        src_ids = encode_sources(loaded, [seed_text])
        with torch.no_grad():
            theirs = loaded.model.hf.generate(
                input_ids=src_ids, attention_mask=torch.ones_like(src_ids), max_new_tokens=12, num_beams=1,
                do_sample=False, decoder_start_token_id=PAD, eos_token_id=EOS, pad_token_id=PAD,
                bad_words_ids=[[PAD]], forced_eos_token_id=None,
            )[0].tolist()[1:]  # fmt: skip
        assert ours == (theirs[: theirs.index(EOS)] if EOS in theirs else theirs)


def sequence_log_prob(loaded: LoadedModel, text: str, output: list[int], budget: int) -> float:
    """log p(output | text), with EOS after it where the output ended before the budget, teacher-forced through
    Hugging Face's model."""
    targets = output + [EOS] if len(output) < budget else output
    logits = hf_logits(loaded, encode_sources(loaded, [text]), torch.tensor([[PAD, *targets[:-1]]]))
    return float(logits.log_softmax(-1).gather(-1, torch.tensor([targets])[..., None]).sum())


def test_beam_search_of_one_is_greedy_and_a_wider_beam_finds_a_likelier_output(models):
    loaded, budget = models["t5"], 6
    wider = 0
    for text in [*TEXTS, "the dog went to rome", "she saw the old man"]:
        greedy = run_with_trace(loaded, text, names=["logits"], max_new_tokens=budget).output_ids[0]
        one = Decoding(method="beam", beam_size=1)
        assert (
            run_with_trace(loaded, text, names=["logits"], max_new_tokens=budget, decoding=one).output_ids[0] == greedy
        )
        four = Decoding(method="beam", beam_size=4, length_penalty=0.0)
        beam = run_with_trace(loaded, text, names=["logits"], max_new_tokens=budget, decoding=four).output_ids[0]
        greedy_score = sequence_log_prob(loaded, text, greedy, budget)
        beam_score = sequence_log_prob(loaded, text, beam, budget)
        assert beam_score >= greedy_score - 1e-5
        wider += beam_score > greedy_score + 0.1
    assert wider >= 2  # the beam found likelier outputs than greedy, here on every text


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_a_cross_attention_head_ablation_is_the_torch_hook_that_zeroes_its_slice(models, arch):
    loaded = models[arch]
    src_ids, tgt_in = batch(loaded)
    layer, head = 1, 2
    ablation = Interventions.of(ablate_head(f"decoder.layers.{layer}.cross_attn", head))
    ours = run_with_trace(loaded, TEXTS, targets=["cat dog", "big"], names=["logits"], interventions=ablation).logits
    tgt_in = trace_tgt_in(run_with_trace(loaded, TEXTS, targets=["cat dog", "big"], names=["logits"]))

    def zero_head(x: torch.Tensor) -> torch.Tensor:  # [b, t, h*d_head]
        x = x.clone()
        x[..., head * D_HEAD : (head + 1) * D_HEAD] = 0.0
        return x

    out_proj = loaded.model.hf.get_submodule(MODULES[arch]["cross_out_proj"].format(i=layer))
    theirs = with_pre_hook(out_proj, zero_head, lambda: hf_logits(loaded, src_ids, tgt_in))
    assert (theirs - hf_logits(loaded, src_ids, tgt_in)).abs().max() > 1e-3  # the ablation does something
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0)


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_an_ff_key_edit_is_the_torch_hook_that_scales_its_coefficient(models, arch):
    loaded = models[arch]
    src_ids, _ = batch(loaded)
    keys = [3, 17, 40]
    edit = Interventions.of(scale_ff_keys("decoder.layers.0.ff", tuple(keys), 0.0))
    ours = run_with_trace(loaded, TEXTS, targets=["cat dog", "big"], names=["logits"], interventions=edit).logits
    tgt_in = trace_tgt_in(run_with_trace(loaded, TEXTS, targets=["cat dog", "big"], names=["logits"]))

    def zero_keys(x: torch.Tensor) -> torch.Tensor:  # [b, t, d_ff]
        x = x.clone()
        x[..., keys] = 0.0
        return x

    down = loaded.model.hf.get_submodule(MODULES[arch]["down_proj"].format(i=0))
    theirs = with_pre_hook(down, zero_keys, lambda: hf_logits(loaded, src_ids, tgt_in))
    assert (theirs - hf_logits(loaded, src_ids, tgt_in)).abs().max() > 1e-3
    torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0)


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_ff_memories_read_the_down_projection_and_the_lens_of_the_last_layer_is_the_output(models, arch):
    loaded = models[arch]
    memories = loaded.family.ff_memories(loaded.model)
    assert memories.layers == [f"decoder.layers.{i}.ff" for i in range(N_LAYERS)]
    down = loaded.model.hf.get_submodule(MODULES[arch]["down_proj"].format(i=1)).weight  # nn.Linear [d, d_ff]
    torch.testing.assert_close(memories.values["decoder.layers.1.ff"][5], down[:, 5].detach())
    trace = run_with_trace(loaded, TEXTS[0], names=[*memories.capture_hooks(), "logits"], max_new_tokens=8)
    last = memories.layers[-1]
    residual = trace.captures[memories.residual_hook(last)].calls[0].tensor
    ff_out = trace.captures[f"{last}.out"].calls[0].tensor
    output = memories.layer_output(last, residual, ff_out)  # [1, t, d]
    lens = memories.lens_logits(residual[0], ff_out[0], output[0])  # [3, t, vocab]
    torch.testing.assert_close(lens[2], trace.logits[0], atol=1e-4, rtol=0)
    torch.testing.assert_close(lens[0], memories.stream_logits(residual[0]), atol=1e-4, rtol=0)
    torch.testing.assert_close(lens[1], ff_out[0] @ memories.output_embedding.T, atol=1e-4, rtol=0)  # no bias
    if arch == "marian":  # the final logits bias is part of the reading: without it the lens is off
        bias = loaded.model.hf.final_logits_bias.reshape(-1)
        assert bias.abs().max() > 0.5
        torch.testing.assert_close(memories.output_bias, bias)


@pytest.mark.parametrize("arch", TRANSLATORS)
def test_source_attribution_reports_how_far_each_row_is_from_the_logit_s_change(models, arch):
    """Integrated gradients of each output token onto the source embedding: a row sums to f(source) - f(no source)
    up to the reported delta, f recomputed here with the encoder's embedding replaced by zeros. Post-LN Marian
    meets completeness closely; T5's RMS norm is nearly scale-free, so the path from zero has a sharp step that a
    few dozen steps miss (the delta says so, rather than hiding it)."""
    loaded = models[arch]
    attributed = source_attribution(loaded, TEXTS[1], max_new_tokens=4, n_steps=64)
    assert attributed.source_tokens == ["a", "king", "went", "to", "paris", "</s>"]
    assert "<pad>" not in attributed.output_tokens  # the start token is never an output
    outputs = [loaded.tokenizer.eos_id if t == "</s>" else loaded.tokenizer.tokenizer.token_to_id(t)
               for t in attributed.output_tokens]  # fmt: skip
    src_ids = encode_sources(loaded, [TEXTS[1]])
    tgt_in = torch.tensor([[PAD, *outputs[:-1]]])
    embedding = loaded.family.source_embedding(loaded.model)
    assert embedding is loaded.model.hf.get_submodule(MODULES[arch]["embedding"])
    plain = hf_logits(loaded, src_ids, tgt_in)[0]  # [t, vocab]
    zero = with_forward_hook(embedding, torch.zeros_like, lambda: hf_logits(loaded, src_ids, tgt_in))[0]
    gaps = [abs(sum(row) - float(plain[p, token] - zero[p, token]))
            for p, (row, token) in enumerate(zip(attributed.integrated_gradients, outputs))]  # fmt: skip
    assert max(gaps) == pytest.approx(attributed.convergence_delta, abs=1e-3)
    if arch == "marian":
        assert attributed.convergence_delta < 1e-2


def with_forward_hook(module: nn.Module, edit: Callable[[torch.Tensor], torch.Tensor], run: Callable[[], torch.Tensor]):
    handle = module.register_forward_hook(lambda _module, _args, output: edit(output))
    try:
        return run()
    finally:
        handle.remove()
