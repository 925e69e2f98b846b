"""Our captures of a Hugging Face model against a peer's: TransformerLens 4.3 loads the same tiny folder (its own
copy: passed a model, it would rewire it) with its compatibility mode off (layer-norm folding and centring change
the residual and the logits), and on the same token ids its attention patterns, residual stream, FF activations
and a head ablation's logits equal ours: GPT-2 and Llama-style causal models, and a T5 translator (encoder,
decoder self- and cross-attention)."""

from __future__ import annotations

import pytest
import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.interventions import NO_INTERVENTIONS, Interventions, ablate_head
from inference.core.tracing import recording
from tests.hugging_face_models import N_HEADS, N_LAYERS, PAD, build_folder

ATOL = 1e-5
IDS = torch.tensor([[3, 10, 25, 7, 41, 13, 60, 8], [3, 55, 12, 30, 30, 9, 70, 21]])  # [batch 2, position 8]
ABLATED = (0, 1)  # layer, head


def bridge_of(folder):
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if not (
        folder / "tokenizer_config.json"
    ).exists():  # TransformerLens wants a tokenizer as from_pretrained gives one
        tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), unk_token="<unk>",
                                            pad_token="<pad>", bos_token="<s>", eos_token="</s>")  # fmt: skip
        tokenizer.save_pretrained(str(folder))
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    bridge = TransformerBridge.boot_transformers(str(folder), tokenizer=tokenizer, device="cpu")
    assert bridge.compatibility_mode is False and bridge._weights_processed is False  # no folding, no centring
    return bridge.eval()


def ours(folder, interventions: Interventions = NO_INTERVENTIONS):
    """Our captures of every layer and the logits, one teacher-forced pass over IDS."""
    loaded = load_checkpoint(folder, "cpu")
    names = [f"layers.{i}.{hook}" for i in range(N_LAYERS) for hook in ("attn.pattern", "resid_pre", "ff.keys")]
    with recording(loaded.model, names, interventions) as (captures, _):
        logits = loaded.model(IDS)  # [b, t, vocab]
    return {name: capture.calls[0].tensor for name, capture in captures.items()}, logits


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def folder(request, tmp_path_factory):
    return build_folder(request.param, tmp_path_factory.mktemp(request.param) / request.param)


def test_patterns_residual_ff_activations_and_logits_equal_transformer_lens(folder):
    captured, logits = ours(folder)
    with torch.no_grad():
        their_logits, cache = bridge_of(folder).run_with_cache(IDS)
    torch.testing.assert_close(logits, their_logits, atol=ATOL, rtol=0)
    for layer in range(N_LAYERS):
        pattern = captured[f"layers.{layer}.attn.pattern"]  # [b, head, q, k]
        assert pattern.shape == (2, N_HEADS, 8, 8)
        torch.testing.assert_close(pattern, cache[f"blocks.{layer}.attn.hook_pattern"], atol=ATOL, rtol=0)
        torch.testing.assert_close(
            captured[f"layers.{layer}.resid_pre"], cache[f"blocks.{layer}.hook_resid_pre"], atol=ATOL, rtol=0
        )
        torch.testing.assert_close(  # the FF key coefficients: the down projection's input
            captured[f"layers.{layer}.ff.keys"], cache[f"blocks.{layer}.mlp.hook_post"], atol=ATOL, rtol=0
        )


def test_a_head_ablation_gives_transformer_lens_logits(folder):
    layer, head = ABLATED
    plain = ours(folder)[1]
    ablated = ours(folder, Interventions.of(ablate_head(f"layers.{layer}.attn", head)))[1]

    def zero_head(z, hook):  # z: [batch, position, head, d_head]
        z = z.clone()
        z[:, :, head] = 0.0
        return z

    with torch.no_grad():
        theirs = bridge_of(folder).run_with_hooks(IDS, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", zero_head)])
    assert (ablated - plain).abs().max() > 1e-3  # the ablation does something
    torch.testing.assert_close(ablated, theirs, atol=ATOL, rtol=0)


# T5: a source (EOS-terminated, no padding) and the decoder's input (the start token, then an output)
SRC = torch.tensor([[5, 10, 25, 7, 41, 13, 1], [8, 55, 12, 30, 30, 9, 1]])  # [batch 2, source 7]
DEC = torch.tensor([[PAD, 12, 30, 9, 44], [PAD, 70, 21, 6, 6]])  # [batch 2, target 5]
# ours -> TransformerLens's, {i} the layer
T5_HOOKS = {
    "encoder.layers.{i}.attn.pattern": "encoder_blocks.{i}.attn.hook_pattern",
    "encoder.layers.{i}.resid_pre": "encoder_blocks.{i}.hook_resid_pre",
    "encoder.layers.{i}.resid_mid": "encoder_blocks.{i}.hook_resid_mid",
    "encoder.layers.{i}.ff.keys": "encoder_blocks.{i}.mlp.hook_post",
    "decoder.layers.{i}.self_attn.pattern": "decoder_blocks.{i}.self_attn.hook_pattern",
    "decoder.layers.{i}.cross_attn.pattern": "decoder_blocks.{i}.cross_attn.hook_pattern",
    "decoder.layers.{i}.resid_pre": "decoder_blocks.{i}.hook_resid_pre",
    "decoder.layers.{i}.resid_mid": "decoder_blocks.{i}.hook_resid_mid2",  # after self- and cross-attention
    "decoder.layers.{i}.ff.keys": "decoder_blocks.{i}.mlp.hook_post",
}


@pytest.fixture(scope="module")
def t5_folder(tmp_path_factory):
    return build_folder("t5", tmp_path_factory.mktemp("t5") / "t5")


def ours_t5(folder, interventions: Interventions = NO_INTERVENTIONS):
    loaded = load_checkpoint(folder, "cpu")
    names = [ours.format(i=i) for i in range(N_LAYERS) for ours in T5_HOOKS]
    with recording(loaded.model, names, interventions) as (captures, _):
        logits = loaded.model(SRC, DEC)  # [b, t, vocab]
    return {name: capture.calls[0].tensor for name, capture in captures.items()}, logits


def test_t5_patterns_residual_ff_activations_and_logits_equal_transformer_lens(t5_folder):
    captured, logits = ours_t5(t5_folder)
    with torch.no_grad():
        their_logits, cache = bridge_of(t5_folder).run_with_cache(SRC, decoder_input=DEC)
    torch.testing.assert_close(logits, their_logits, atol=ATOL, rtol=0)
    for layer in range(N_LAYERS):
        for ours, theirs in T5_HOOKS.items():
            mine = captured[ours.format(i=layer)]
            assert mine.shape[0] == 2 and mine.abs().max() > 0
            torch.testing.assert_close(mine, cache[theirs.format(i=layer)], atol=ATOL, rtol=0)


@pytest.mark.parametrize("attention", ["encoder.layers.{i}.attn", "decoder.layers.{i}.cross_attn"])
def test_a_t5_head_ablation_gives_transformer_lens_logits(t5_folder, attention):
    layer, head = ABLATED
    plain = ours_t5(t5_folder)[1]
    ablated = ours_t5(t5_folder, Interventions.of(ablate_head(attention.format(i=layer), head)))[1]
    theirs_hook = {"encoder.layers.{i}.attn": "encoder_blocks.{i}.attn.hook_z",
                   "decoder.layers.{i}.cross_attn": "decoder_blocks.{i}.cross_attn.hook_z"}[attention]  # fmt: skip

    def zero_head(z, hook):  # z: [batch, position, head, d_head]
        z = z.clone()
        z[:, :, head] = 0.0
        return z

    with torch.no_grad():
        theirs = bridge_of(t5_folder).run_with_hooks(
            SRC, decoder_input=DEC, fwd_hooks=[(theirs_hook.format(i=layer), zero_head)]
        )
    assert (ablated - plain).abs().max() > 1e-3
    torch.testing.assert_close(ablated, theirs, atol=ATOL, rtol=0)
