"""The Hugging Face encoder-decoder translators MemLens reads (Marian, T5), one table each: where the modules of a
model `AutoModelForSeq2SeqLM` builds sit, which of them our hook points hang on, and its config attributes.

Paths are relative to the Hugging Face model; a block's parts are relative to the block. Per block:

    self_attention   the self-attention module; eager attention returns its probabilities [b, h, q, k] as
                     output[pattern_index]
    self_out_proj    its output projection: the input [b, t, h*d_head] holds the heads' outputs, head-major
    cross_attention  the decoder's attention over the encoder output (decoder blocks only), and its projection
    cross_out_proj
    ff_in            the module whose input is the residual entering the feed-forward sub-layer (resid_mid):
                     pre-LN T5's FF sub-layer (its norm inside), post-LN Marian's first FF matrix
    ff_out           the module whose output is the FF output (ff.out), before the residual is added
    down_proj        the FF's second matrix (nn.Linear, (out=d, in=d_ff)): its input holds the key coefficients
    ff_post_norm     post-LN only: the norm that makes the block output of residual + FF output

`lm_input` is what the LM head reads, from the decoder's last block output h: a pre-LN model's final norm (T5 also
scales it by d_model**-0.5 where its embeddings are tied); a post-LN model's h itself (Marian).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inference.families.hugging_face.architectures import NormKind

DEFAULT_MAX_POSITIONS = 512  # a model with relative positions (T5) reads any length: MemLens bounds it here


@dataclass(frozen=True)
class Stack:
    """One stack's paths: its blocks and, relative to a block, its parts (module doc)."""

    blocks: str
    self_attention: str
    self_out_proj: str
    ff_in: str
    ff_out: str
    down_proj: str
    ff_post_norm: str | None = None
    cross_attention: str | None = None
    cross_out_proj: str | None = None
    final_norm: str | None = None  # a pre-LN stack's norm after its last block

    def block(self, layer: int, part: str = "") -> str:
        """The path of block `layer`, or of its `part` ("self_attention", "down_proj", ...)."""
        path = f"{self.blocks}.{layer}"
        return f"{path}.{getattr(self, part)}" if part else path


@dataclass(frozen=True)
class TranslatorArchitecture:
    model_type: str  # config.json's model_type
    title: str
    encoder: Stack
    decoder: Stack
    encoder_module: str  # the encoder as one module: (input_ids, attention_mask) -> last_hidden_state
    source_embedding: str  # the encoder's token embedding (its own module; the decoder's shares its weight)
    lm_head: str
    pattern_index: int  # where an attention module's output holds its probabilities
    norm_kind: NormKind
    pre_ln: bool
    # config attribute names (of the transformers config class)
    n_encoder_layers: str
    n_decoder_layers: str
    n_heads: tuple[str, ...]  # every stack's: MemLens reads the stacks at one width
    d_model: str
    d_ff: tuple[str, ...]
    max_positions: str | None  # None: relative positions (DEFAULT_MAX_POSITIONS)
    refusal: Callable[[Any], str | None] = lambda hf_config: None

    def config_values(self, sizes: dict[str, int]) -> dict[str, Any]:
        """A config.json of this architecture holding `sizes` (our names, as in read_translator_sizes) and the
        model type; transformers' config class fills in the rest."""
        values: dict[str, Any] = {"model_type": self.model_type}
        for ours, value in sizes.items():
            names = getattr(self, ours)
            for name in names if isinstance(names, tuple) else (names,) if names else ():
                values[name] = value
        return values

    def stack(self, name: str) -> Stack:
        return {"encoder": self.encoder, "decoder": self.decoder}[name]


def _marian_refusal(hf_config: Any) -> str | None:
    if not getattr(hf_config, "share_encoder_decoder_embeddings", True):
        return "separate source and target vocabularies (share_encoder_decoder_embeddings false) are not read yet"
    return None


def _t5_refusal(hf_config: Any) -> str | None:
    if getattr(hf_config, "num_decoder_layers", None) is None:
        return "the T5 config names no num_decoder_layers"
    return None


def _marian_stack(blocks: str, cross: bool) -> Stack:
    return Stack(
        blocks=blocks,
        self_attention="self_attn",
        self_out_proj="self_attn.out_proj",
        ff_in="fc1",
        ff_out="fc2",
        down_proj="fc2",
        ff_post_norm="final_layer_norm",
        cross_attention="encoder_attn" if cross else None,
        cross_out_proj="encoder_attn.out_proj" if cross else None,
    )


def _t5_stack(blocks: str, cross: bool, final_norm: str) -> Stack:
    ff = "layer.2" if cross else "layer.1"
    return Stack(
        blocks=blocks,
        self_attention="layer.0.SelfAttention",
        self_out_proj="layer.0.SelfAttention.o",
        ff_in=ff,
        ff_out=f"{ff}.DenseReluDense",
        down_proj=f"{ff}.DenseReluDense.wo",  # gated variants (Flan-T5) too: its input is act(wi_0 x) * wi_1 x
        cross_attention="layer.1.EncDecAttention" if cross else None,
        cross_out_proj="layer.1.EncDecAttention.o" if cross else None,
        final_norm=final_norm,
    )


MARIAN = TranslatorArchitecture(
    model_type="marian",
    title="Marian",
    encoder=_marian_stack("model.encoder.layers", cross=False),
    decoder=_marian_stack("model.decoder.layers", cross=True),
    encoder_module="model.encoder",
    source_embedding="model.encoder.embed_tokens",
    lm_head="lm_head",
    pattern_index=1,
    norm_kind="layer_norm",
    pre_ln=False,
    n_encoder_layers="encoder_layers",
    n_decoder_layers="decoder_layers",
    n_heads=("encoder_attention_heads", "decoder_attention_heads"),
    d_model="d_model",
    d_ff=("encoder_ffn_dim", "decoder_ffn_dim"),
    max_positions="max_position_embeddings",
    refusal=_marian_refusal,
)

T5 = TranslatorArchitecture(
    model_type="t5",
    title="T5",
    encoder=_t5_stack("encoder.block", cross=False, final_norm="encoder.final_layer_norm"),
    decoder=_t5_stack("decoder.block", cross=True, final_norm="decoder.final_layer_norm"),
    encoder_module="encoder",
    source_embedding="encoder.embed_tokens",
    lm_head="lm_head",
    pattern_index=2,
    norm_kind="rms_norm",
    pre_ln=True,
    n_encoder_layers="num_layers",
    n_decoder_layers="num_decoder_layers",
    n_heads=("num_heads",),
    d_model="d_model",
    d_ff=("d_ff",),
    max_positions=None,
    refusal=_t5_refusal,
)

TRANSLATORS = {arch.model_type: arch for arch in (MARIAN, T5)}
SIZES = ("n_encoder_layers", "n_decoder_layers", "n_heads", "d_model", "d_ff", "max_positions")


def translator_architecture(model_type: object) -> TranslatorArchitecture:
    """The table of a translator's model type; ValueError naming the supported ones otherwise."""
    found = TRANSLATORS.get(model_type) if isinstance(model_type, str) else None
    if found is None:
        raise ValueError(f"model_type {model_type!r} is not a translator MemLens reads; supported: marian, t5")
    return found


def read_translator_sizes(arch: TranslatorArchitecture, hf_config: Any) -> dict[str, int]:
    """Our SIZES of a transformers config object; ValueError naming the attributes it lacks (or holds no positive
    whole number in), and where the stacks differ in heads or FF width."""
    sizes: dict[str, int] = {}
    missing: list[str] = []
    for ours in SIZES:
        names = getattr(arch, ours)
        if names is None:
            sizes[ours] = DEFAULT_MAX_POSITIONS
            continue
        values: dict[str, int] = {}
        for name in names if isinstance(names, tuple) else (names,):
            value = getattr(hf_config, name, None)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                missing.append(name)
            else:
                values[name] = value
        if len(set(values.values())) > 1:
            raise ValueError(f"the {arch.title} config's stacks differ ({values}): MemLens reads them at one width")
        if values:
            sizes[ours] = next(iter(values.values()))
    if missing:
        raise ValueError(
            f"the {arch.title} config ({arch.model_type}) lacks {', '.join(missing)}, or holds no positive whole "
            "number in it"
        )
    return sizes
