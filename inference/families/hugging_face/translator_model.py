"""An encoder-decoder translator from Hugging Face (Marian, T5: `translator_architectures`), wrapped so that MemLens
reads and edits it through the hook points of its own translators (the Memory Transformer's names):

    encoder.layers.{i}.resid_pre          [batch position d_model]   block input
    encoder.layers.{i}.attn.pattern       [batch head query key]     self-attention probabilities (READ ONLY)
    encoder.layers.{i}.attn.z             [batch head query d_head]  per-head outputs (scale to ablate a head)
    encoder.layers.{i}.resid_mid          [batch position d_model]   residual entering the FF sub-layer
    encoder.layers.{i}.ff.keys / ff.out   the FF's key coefficients [.. ff_key] and output [.. d_model]
    encoder.out                           [batch position d_model]   the encoder's output, what the decoder reads
    decoder.layers.{i}.resid_pre, .self_attn.pattern/.z, .cross_attn.pattern/.z, .resid_mid, .ff.keys, .ff.out
    decoder.out                           [batch position d_model]   what the LM head reads
    logits                                [batch position vocab]     next-token logits (Marian's bias added)

Axes: "enc" (the source, EOS included) and "dec" (the decoder start token + the output). The Hugging Face model is
kept as it is (`hf`, eager attention); torch hooks route its tensors through our hook points (model.py's routes), so
a hook point's replacement replaces the tensor in the model's run. Patterns are read, never edited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from inference.core.capabilities import NoMemory
from inference.core.hooks import HookPoint, name_hook_points
from inference.families.hugging_face.model import (
    AttentionHooks,
    ByHeads,
    FeedForwardHooks,
    InputRoute,
    LayerHooks,
    OutputRoute,
    PatternRead,
    SpecialIdFields,
    checked_special_ids,
    filled_hf_config,
    layer_weight,
    refuse_unsupported,
    transformers_config,
)
from inference.families.hugging_face.translator_architectures import (
    SIZES,
    Stack,
    TranslatorArchitecture,
    translator_architecture,
)

FAMILY_NAME = "hugging_face_translator"
ENCODER_AXIS, DECODER_AXIS = "enc", "dec"


@dataclass
class HuggingFaceTranslatorConfig(SpecialIdFields, NoMemory):
    """A Hugging Face encoder-decoder translator as MemLens sees it (read from its folder). `bos_id` is the
    decoder's start token (the pad token in Marian and T5): every output is decoded from it. `hf_config` is the
    folder's config.json; a training config's model section names the sizes (and, in hf_config, any other setting
    of the architecture) and gets the config.json of its architecture with those sizes and special ids."""

    model_type: str
    n_encoder_layers: int
    n_decoder_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    max_positions: int
    vocab_size: int = 2
    pad_id: int = 0
    bos_id: int = 0
    eos_id: int = 1
    hf_config: dict[str, Any] = field(default_factory=dict)
    family: str = FAMILY_NAME

    def __post_init__(self) -> None:
        if self.family != FAMILY_NAME:
            raise ValueError(f"HuggingFaceTranslatorConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        arch = translator_architecture(self.model_type)
        sizes = {name: getattr(self, name) for name in SIZES}
        checked_special_ids(self, sizes)
        self.hf_config = filled_hf_config(
            self.hf_config,
            {
                **arch.config_values(sizes),
                "vocab_size": self.vocab_size,
                "decoder_start_token_id": self.bos_id,
                "eos_token_id": self.eos_id,
                "pad_token_id": self.pad_id,
            },
        )


class DecoderLayerHooks(nn.Module):
    def __init__(self, n_heads: int, d_ff: int):
        super().__init__()
        tokens = {"position": DECODER_AXIS}
        self.resid_pre = HookPoint("batch position d_model", "residual stream entering the block", tokens)
        self.self_attn = AttentionHooks(n_heads, (DECODER_AXIS, DECODER_AXIS))
        self.cross_attn = AttentionHooks(n_heads, (DECODER_AXIS, ENCODER_AXIS))
        self.resid_mid = HookPoint(
            "batch position d_model", "residual stream entering the feed-forward sub-layer", tokens
        )
        self.ff = FeedForwardHooks(d_ff, DECODER_AXIS)


class StackHooks(nn.Module):
    def __init__(self, layers: list[nn.Module], axis: str, out_doc: str):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.out = HookPoint("batch position d_model", out_doc, {"position": axis})


class HookedTranslator(nn.Module):
    """A Hugging Face encoder-decoder (`hf`) with MemLens's hook points (module doc); forward(src_ids, tgt_in)
    gives teacher-forced logits, as every translator's. ValueError where the model lacks a module its
    architecture's table names, or holds another shape."""

    hf: Any  # the transformers model (its own methods: save_pretrained)

    def __init__(self, hf: nn.Module, config: HuggingFaceTranslatorConfig):
        super().__init__()
        arch = translator_architecture(config.model_type)
        refuse_unsupported(arch, getattr(hf, "config", None))
        self.hf = hf
        self.config = config
        h, f = config.n_heads, config.d_ff
        self.encoder = StackHooks(
            [LayerHooks(h, f, (ENCODER_AXIS, ENCODER_AXIS)) for _ in range(config.n_encoder_layers)],
            ENCODER_AXIS,
            "encoder output: what the decoder's cross-attention reads",
        )
        self.decoder = StackHooks(
            [DecoderLayerHooks(h, f) for _ in range(config.n_decoder_layers)], DECODER_AXIS, "what the LM head reads"
        )
        self.logits = HookPoint("batch position vocab", "next-token logits", {"position": DECODER_AXIS})
        name_hook_points(self)
        self._check_shapes(arch)
        self._install_hooks(arch)

    @property
    def architecture(self) -> TranslatorArchitecture:
        return translator_architecture(self.config.model_type)

    def part(self, path: str) -> nn.Module:
        """The Hugging Face model's module at `path`; ValueError naming it where there is none."""
        try:
            return self.hf.get_submodule(path)
        except AttributeError:
            raise ValueError(
                f"the {self.config.model_type} model has no module {path}: not the layout MemLens reads"
            ) from None

    def down_projection_weight(self, stack: Stack, layer: int) -> torch.Tensor:  # [d_model, d_ff]
        return layer_weight(self.part(stack.block(layer, "down_proj")))

    def encode(self, src_ids: torch.Tensor) -> torch.Tensor:  # [b, n] -> [b, n, d_model]
        """The encoder's output for right-padded sources (padding masked)."""
        encoder = self.part(self.architecture.encoder_module)
        states = encoder(input_ids=src_ids, attention_mask=self.real_tokens(src_ids).long()).last_hidden_state
        return self.encoder.out(states)

    def decode(
        self, tgt_in: torch.Tensor, states: torch.Tensor, src_ids: torch.Tensor, cache: Any = None
    ) -> torch.Tensor:
        """Logits [b, t, vocab] of the decoder on tgt_in [b, t], reading the encoder states [b, n, d] of src_ids.
        With a `cache` (transformers' EncoderDecoderCache, from `new_cache`), tgt_in holds only the tokens after
        those the cache has seen, and the cache takes their keys and values."""
        from transformers.modeling_outputs import BaseModelOutput

        output = self.hf(
            encoder_outputs=BaseModelOutput(last_hidden_state=states),
            attention_mask=self.real_tokens(src_ids).long(),
            decoder_input_ids=tgt_in,
            use_cache=cache is not None,
            **({} if cache is None else {"cache": cache}),
        )
        return self.logits(output.logits)

    @staticmethod
    def new_cache() -> Any:
        """An empty key/value cache of the decoder's self- and cross-attention, for step-by-step decoding."""
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache

        return EncoderDecoderCache(DynamicCache(), DynamicCache())

    def forward(self, src_ids: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:  # [b, n], [b, t] -> [b, t, vocab]
        return self.decode(tgt_in, self.encode(src_ids), src_ids)

    def real_tokens(self, ids: torch.Tensor) -> torch.Tensor:  # [b, n] -> [b, n] bool
        return ids != self.config.pad_id

    def _check_shapes(self, arch: TranslatorArchitecture) -> None:
        c = self.config
        for name, stack, layers in (
            ("encoder", arch.encoder, c.n_encoder_layers),
            ("decoder", arch.decoder, c.n_decoder_layers),
        ):
            blocks = self.part(stack.blocks)
            if not isinstance(blocks, nn.ModuleList) or len(blocks) != layers:
                raise ValueError(f"{stack.blocks} should be a list of {layers} {name} blocks")
            parts = ["self_attention", "self_out_proj", "ff_in", "ff_out"]
            parts += ["cross_attention", "cross_out_proj"] if stack.cross_attention else []
            parts += ["ff_post_norm"] if stack.ff_post_norm else []
            for i in range(layers):
                for part in parts:
                    self.part(stack.block(i, part))
                weight = self.down_projection_weight(stack, i)
                if tuple(weight.shape) != (c.d_model, c.d_ff):
                    raise ValueError(
                        f"{stack.block(i, 'down_proj')} has a weight of shape {tuple(weight.shape)}, not "
                        f"{(c.d_model, c.d_ff)} (d_model, d_ff)"
                    )
        head = layer_weight(self.part(arch.lm_head))
        if tuple(head.shape) != (c.vocab_size, c.d_model):
            raise ValueError(
                f"{arch.lm_head} has a weight of shape {tuple(head.shape)}, not {(c.vocab_size, c.d_model)}"
            )

    def _install_hooks(self, arch: TranslatorArchitecture) -> None:
        """Hooks on the Hugging Face modules, for the wrapper's lifetime."""
        n_heads = self.config.n_heads
        for stack, hooks in ((arch.encoder, self.encoder), (arch.decoder, self.decoder)):
            for i, layer in enumerate(hooks.layers):
                assert isinstance(layer, (LayerHooks, DecoderLayerHooks))
                for attention, out_proj, points in _attentions(layer):
                    self.part(stack.block(i, attention)).register_forward_hook(
                        PatternRead(points.pattern, points.z.name, arch.pattern_index)
                    )
                    self.part(stack.block(i, out_proj)).register_forward_pre_hook(
                        InputRoute(ByHeads(points.z, n_heads)), with_kwargs=True
                    )
                self.part(stack.block(i)).register_forward_pre_hook(InputRoute(layer.resid_pre), with_kwargs=True)
                self.part(stack.block(i, "ff_in")).register_forward_pre_hook(
                    InputRoute(layer.resid_mid), with_kwargs=True
                )
                self.part(stack.block(i, "down_proj")).register_forward_pre_hook(
                    InputRoute(layer.ff.keys), with_kwargs=True
                )
                self.part(stack.block(i, "ff_out")).register_forward_hook(OutputRoute(layer.ff.out))
        self.part(arch.lm_head).register_forward_pre_hook(InputRoute(self.decoder.out), with_kwargs=True)


def _attentions(layer: LayerHooks | DecoderLayerHooks) -> list[tuple[str, str, AttentionHooks]]:
    """A block's attentions as (its Stack part, its output projection's part, their hook points)."""
    if isinstance(layer, DecoderLayerHooks):
        return [
            ("self_attention", "self_out_proj", layer.self_attn),
            ("cross_attention", "cross_out_proj", layer.cross_attn),
        ]
    return [("self_attention", "self_out_proj", layer.attn)]


def fresh_translator(config: HuggingFaceTranslatorConfig) -> HookedTranslator:
    """A translator of `config` with fresh (random) weights, drawn from torch's generator; eager attention."""
    from transformers import AutoModelForSeq2SeqLM

    hf_config = transformers_config(config.model_type, config.hf_config)
    refuse_unsupported(translator_architecture(config.model_type), hf_config)
    hf = AutoModelForSeq2SeqLM.from_config(hf_config, attn_implementation="eager", dtype=torch.float32)
    return HookedTranslator(hf, config)
