"""The Hugging Face architectures MemLens reads, one table each: where its modules sit in a model
`AutoModelForCausalLM` builds, which of them our hook points hang on, and the names of its config attributes.

Paths are relative to the Hugging Face model; `{i}` in a block's path stands for its index. Per block:

    attention   the attention module; eager attention returns (output, probabilities [b, h, q, k])
    out_proj    the attention's output projection: its input [b, t, h*d_head] holds the heads' outputs, head-major
    ff_norm     the norm in front of the feed-forward sub-layer: its input is the residual entering it (resid_mid)
    mlp         the feed-forward sub-layer: its output is what it adds to the residual (ff.out)
    down_proj   the feed-forward's second matrix: its input [b, t, d_ff] holds the key coefficients (ff.keys)

A parallel-residual block (GPT-NeoX's default) feeds the FF the block input through `ff_norm`, beside the attention,
and adds both outputs to it.

`down_layout` says how the down projection stores its weight: "conv1d" (GPT-2's Conv1D, (in=d_ff, out=d): value i
is row i) or "linear" (nn.Linear, (out=d, in=d_ff): value i is column i).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

DownLayout = Literal["conv1d", "linear"]
NormKind = Literal["layer_norm", "rms_norm"]


@dataclass(frozen=True)
class Architecture:
    model_type: str  # config.json's model_type
    title: str  # in words, e.g. "GPT-2"
    blocks: str  # the ModuleList of blocks
    attention: str  # relative to a block, as the four below
    out_proj: str
    ff_norm: str
    mlp: str
    down_proj: str
    down_layout: DownLayout
    final_norm: str
    final_norm_kind: NormKind
    lm_head: str
    # config attribute names (of the transformers config class, which fills in the defaults config.json leaves out)
    n_layers: str
    n_heads: str
    d_model: str
    d_ff: str
    max_positions: str
    d_ff_default: int | None = None  # d_ff = this x d_model where the d_ff attribute is None (GPT-2's n_inner)
    # the config attribute that makes a block's FF read the block input, beside the attention (GPT-NeoX's
    # use_parallel_residual: output = input + attention + FF), or None where the FF always follows the attention
    parallel_residual: str | None = None
    # a reason to refuse a config of this architecture, or None: a variant the tables do not describe
    refusal: Callable[[Any], str | None] = lambda hf_config: None

    def config_values(self, sizes: dict[str, int]) -> dict[str, Any]:
        """A config.json of this architecture holding `sizes` (n_layers, n_heads, d_model, d_ff, max_positions,
        under our names) and the model type; transformers' config class fills in the rest."""
        return {"model_type": self.model_type, **{getattr(self, ours): value for ours, value in sizes.items()}}

    def block(self, layer: int, part: str = "") -> str:
        """The path of block `layer`, or of its `part` ("attention", "out_proj", ...)."""
        path = f"{self.blocks}.{layer}"
        return f"{path}.{getattr(self, part)}" if part else path


def _gpt2_refusal(hf_config: Any) -> str | None:
    if getattr(hf_config, "add_cross_attention", False):
        return "cross-attention (add_cross_attention) is not supported: MemLens reads a decoder-only GPT-2"
    return None


GPT2 = Architecture(
    model_type="gpt2",
    title="GPT-2",
    blocks="transformer.h",
    attention="attn",
    out_proj="attn.c_proj",
    ff_norm="ln_2",
    mlp="mlp",
    down_proj="mlp.c_proj",
    down_layout="conv1d",
    final_norm="transformer.ln_f",
    final_norm_kind="layer_norm",
    lm_head="lm_head",
    n_layers="n_layer",
    n_heads="n_head",
    d_model="n_embd",
    d_ff="n_inner",
    max_positions="n_positions",
    d_ff_default=4,
    refusal=_gpt2_refusal,
)

GPT_NEOX = Architecture(
    model_type="gpt_neox",
    title="GPT-NeoX",
    blocks="gpt_neox.layers",
    attention="attention",
    out_proj="attention.dense",
    ff_norm="post_attention_layernorm",
    mlp="mlp",
    down_proj="mlp.dense_4h_to_h",
    down_layout="linear",
    final_norm="gpt_neox.final_layer_norm",
    final_norm_kind="layer_norm",
    lm_head="lm_head",
    n_layers="num_hidden_layers",
    n_heads="num_attention_heads",
    d_model="hidden_size",
    d_ff="intermediate_size",
    max_positions="max_position_embeddings",
    parallel_residual="use_parallel_residual",
)

LLAMA = Architecture(
    model_type="llama",
    title="Llama",
    blocks="model.layers",
    attention="self_attn",
    out_proj="self_attn.o_proj",
    ff_norm="post_attention_layernorm",
    mlp="mlp",
    down_proj="mlp.down_proj",  # its input: act(gate_proj x) * up_proj x, the gated FF's key coefficients
    down_layout="linear",
    final_norm="model.norm",
    final_norm_kind="rms_norm",
    lm_head="lm_head",
    n_layers="num_hidden_layers",
    n_heads="num_attention_heads",  # query heads; fewer key/value heads (grouped-query attention) are fine
    d_model="hidden_size",
    d_ff="intermediate_size",
    max_positions="max_position_embeddings",
)

ARCHITECTURES = {arch.model_type: arch for arch in (GPT2, GPT_NEOX, LLAMA)}


def supported() -> str:
    """The supported model types in words, e.g. "gpt2, gpt_neox, llama"."""
    return ", ".join(sorted(ARCHITECTURES))


def architecture(model_type: object) -> Architecture:
    """The table of a model type; ValueError naming it and the supported ones otherwise."""
    found = ARCHITECTURES.get(model_type) if isinstance(model_type, str) else None
    if found is None:
        raise ValueError(f"model_type {model_type!r} is not supported; supported: {supported()}")
    return found


def read_sizes(arch: Architecture, hf_config: Any) -> dict[str, int]:
    """n_layers, n_heads, d_model, d_ff and max_positions of a transformers config object; ValueError naming the
    attributes it lacks (or holds no positive whole number in)."""
    sizes: dict[str, int] = {}
    missing: list[str] = []
    for ours in ("n_layers", "n_heads", "d_model", "max_positions", "d_ff"):
        attribute = getattr(arch, ours)
        value = getattr(hf_config, attribute, None)
        if ours == "d_ff" and value is None and arch.d_ff_default is not None and "d_model" in sizes:
            value = arch.d_ff_default * sizes["d_model"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            missing.append(attribute)
            continue
        sizes[ours] = value
    if missing:
        raise ValueError(
            f"the {arch.title} config ({arch.model_type}) lacks {', '.join(missing)}, or holds no positive whole "
            "number in it"
        )
    return sizes
