"""Our captures of a Hugging Face model against a peer's: TransformerLens 4.3 loads the same tiny folder (its own
copy: passed a model, it would rewire it) with its compatibility mode off (layer-norm folding and centring change
the residual and the logits), and on the same token ids its attention patterns, residual stream, FF activations
and a head ablation's logits equal ours."""

from __future__ import annotations

import pytest
import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.interventions import NO_INTERVENTIONS, Interventions, ablate_head
from inference.core.tracing import recording
from tests.hugging_face_models import N_HEADS, N_LAYERS, build_folder

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
