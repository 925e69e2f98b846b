"""A causal language model from Hugging Face (GPT-2, GPT-NeoX, Llama: `architectures`), wrapped so that MemLens
reads and edits it through the hook points every language model has.

The Hugging Face model is kept as it is (submodule `hf`, eager attention, so its attention modules return their
probabilities). Torch hooks, installed once when the wrapper is built, pass each tensor through one of our
`HookPoint`s; a tensor a hook point's hooks replace replaces the module's input (pre-hooks) or output (hooks):

    layers.{i}.resid_pre    [batch position d_model]    block input                  pre-hook on the block
    layers.{i}.attn.pattern [batch head query key]      attention probabilities       hook on the attention (READ ONLY)
    layers.{i}.attn.z       [batch head query d_head]   per-head outputs              pre-hook on the output projection
    layers.{i}.resid_mid    [batch position d_model]    residual entering the FF      pre-hook on the FF norm
    layers.{i}.ff.keys      [batch position ff_key]     key coefficients              pre-hook on the down projection
    layers.{i}.ff.out       [batch position d_model]    FF output                     hook on the MLP
    out                     [batch position d_model]    final norm output             hook on the final norm
    logits                  [batch position vocab]      next-token logits             hook on the LM head

All positions run over one token axis, "tok". Two readings differ from MemLens's own language model:

- The attention probabilities are already applied when the hook sees them, so a pattern is read, never edited
  (an edit raises InterventionError); scale `layers.{i}.attn.z` to ablate a head.
- The residual entering the FF sub-layer is the FF norm's input: editing `resid_mid` changes what the FF reads,
  not the residual its output is added to.
- A parallel-residual block (GPT-NeoX's use_parallel_residual) feeds its FF the block input, beside the attention:
  there `resid_mid` is the block input + the attention output, what the FF output is added to (so resid_mid +
  ff.out is the block output, as in a sequential block), and it is read, never edited.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from inference.core.capabilities import NoMemory
from inference.core.hooks import HookPoint, name_hook_points
from inference.core.interventions import InterventionError
from inference.families.hugging_face.architectures import Architecture, architecture
from inference.families.hugging_face.translator_architectures import TranslatorArchitecture

if TYPE_CHECKING:
    from transformers import PreTrainedConfig

FAMILY_NAME = "hugging_face"
AXIS = "tok"
SIZES = ("n_layers", "n_heads", "d_model", "d_ff", "max_positions")  # HuggingFaceConfig's names of the sizes
INPUT_KEYWORDS = ("hidden_states", "input", "x")  # where a module called with keywords finds its input


class SpecialIdFields:
    """The special ids every Hugging Face config holds, by name (checked_special_ids reads them)."""

    pad_id: int
    bos_id: int
    eos_id: int

    def special_ids(self) -> dict[str, int]:
        return {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}


@dataclass
class HuggingFaceConfig(SpecialIdFields, NoMemory):
    """A Hugging Face causal language model as MemLens sees it (read from its folder, never changed after: the
    fields stay settable only because FamilyConfig says so). `hf_config` is the folder's config.json, kept so
    that `build` makes the same model with fresh weights; a training config's model section names the sizes (and,
    in hf_config, any other setting of the architecture) and gets the config.json of its architecture with those
    sizes and special ids. GPT-2 has one id for BOS, EOS and padding: pad, bos and eos need not differ (MemLens's
    own families demand they do)."""

    model_type: str
    n_layers: int
    n_heads: int  # query heads
    d_model: int
    d_ff: int  # FF keys per layer
    max_positions: int
    vocab_size: int = 2  # these four come from the tokenizer (a folder's config.json, or a training run's)
    pad_id: int = 0
    bos_id: int = 0
    eos_id: int = 0
    hf_config: dict[str, Any] = field(default_factory=dict)
    family: str = FAMILY_NAME

    def __post_init__(self) -> None:
        if self.family != FAMILY_NAME:
            raise ValueError(f"HuggingFaceConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        arch = architecture(self.model_type)
        checked_special_ids(self, {name: getattr(self, name) for name in SIZES})
        self.hf_config = filled_hf_config(
            self.hf_config,
            {
                **arch.config_values({name: getattr(self, name) for name in SIZES}),
                "vocab_size": self.vocab_size,
                "bos_token_id": self.bos_id,
                "eos_token_id": self.eos_id,
                "pad_token_id": self.pad_id,
            },
        )

    @property
    def masks_padding(self) -> bool:
        """True where the pad id is no other special token's, so padding can be told from text and masked."""
        return self.pad_id not in (self.bos_id, self.eos_id)


def filled_hf_config(given: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """The config.json a model is built from: a folder's own (it names its model_type) as it is; else a training
    config's model section, whose hf_config holds only the architecture's other settings (e.g. {"activation_function":
    "relu"}), completed with `ours` (the model type, the sizes and the special ids, which win)."""
    return dict(given) if "model_type" in given else {**given, **ours}


def checked_special_ids(config: Any, sizes: dict[str, int]) -> None:
    """ValueError where a size (or the vocabulary) is not positive, max_positions leaves no room for a token, or a
    special id (config.special_ids()) lies outside the vocabulary."""
    bad = [name for name, value in {**sizes, "vocab_size": config.vocab_size}.items() if value < 1]
    if bad:
        raise ValueError(f"{', '.join(bad)} must be positive")
    if sizes["max_positions"] < 2:
        raise ValueError("max_positions must be at least 2")
    outside = {name: i for name, i in config.special_ids().items() if not 0 <= i < config.vocab_size}
    if outside:
        raise ValueError(f"special ids {outside} lie outside the vocabulary of {config.vocab_size}")


def transformers_config(model_type: str, values: dict[str, Any]) -> PreTrainedConfig:
    """The transformers config object of a config.json (its class fills in the defaults the file leaves out);
    ValueError where transformers refuses it."""
    from transformers import CONFIG_MAPPING

    try:
        return CONFIG_MAPPING[model_type].from_dict(dict(values))
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"transformers cannot read the {model_type} config: {error}") from None


def refuse_unsupported(arch: Architecture | TranslatorArchitecture, hf_config: Any) -> None:
    """ValueError where the config is a variant of its architecture that the table does not describe."""
    reason = arch.refusal(hf_config)
    if reason is not None:
        raise ValueError(reason)


Axes = tuple[str, str]  # (query axis, key axis) of the hook points: AXIS for both in a plain causal LM


class AttentionHooks(nn.Module):
    def __init__(self, n_heads: int, axes: Axes):
        super().__init__()
        query, key = axes
        self.pattern = HookPoint(
            "batch head query key",
            "attention probabilities (read only: scale attn.z to ablate a head)",
            {"query": query, "key": key},
            {"head": n_heads},
        )
        self.z = HookPoint(
            "batch head query d_head",
            "per-head outputs before the output projection",
            {"query": query},
            {"head": n_heads},
        )


class FeedForwardHooks(nn.Module):
    def __init__(self, d_ff: int, axis: str):
        super().__init__()
        tokens = {"position": axis}
        self.keys = HookPoint(
            "batch position ff_key",
            "key coefficients: the down projection's input (after the activation; a gated FF's gate x up)",
            tokens,
            {"ff_key": d_ff},
        )
        self.out = HookPoint("batch position d_model", "feed-forward output, added to resid_mid", tokens)


RESID_MID = "residual stream entering the feed-forward sub-layer (before its norm)"
PARALLEL_RESID_MID = (
    "block input + attention output, what the FF output is added to (READ ONLY: a parallel-residual FF reads the "
    "block input, resid_pre)"
)


class LayerHooks(nn.Module):
    def __init__(self, n_heads: int, d_ff: int, axes: Axes, resid_mid_doc: str = RESID_MID):
        super().__init__()
        tokens = {"position": axes[0]}
        self.resid_pre = HookPoint("batch position d_model", "residual stream entering the block", tokens)
        self.attn = AttentionHooks(n_heads, axes)
        self.resid_mid = HookPoint("batch position d_model", resid_mid_doc, tokens)
        self.ff = FeedForwardHooks(d_ff, axes[0])


class HookedCausalLM(nn.Module):
    """A Hugging Face causal LM (`hf`) with MemLens's hook points (module doc); `config` is its HuggingFaceConfig;
    `axes` name the query and key axes of the hook points (a wrapper that reads segments names its own).
    ValueError where the model lacks a module its architecture's table names, or holds another shape."""

    hf: Any  # the transformers model (its own methods: save_pretrained, get_input_embeddings)

    def __init__(self, hf: nn.Module, config: HuggingFaceConfig, axes: Axes = (AXIS, AXIS)):
        super().__init__()
        arch = architecture(config.model_type)
        refuse_unsupported(arch, getattr(hf, "config", None))
        self.hf = hf
        self.config = config
        self.base_config = config  # the Hugging Face model's own, where a wrapper's config is another
        self.parallel_residual = bool(arch.parallel_residual and getattr(hf.config, arch.parallel_residual, False))
        resid_mid = PARALLEL_RESID_MID if self.parallel_residual else RESID_MID
        self.layers = nn.ModuleList(
            LayerHooks(config.n_heads, config.d_ff, axes, resid_mid) for _ in range(config.n_layers)
        )
        tokens = {"position": axes[0]}
        self.out = HookPoint("batch position d_model", "final norm output: what the LM head reads", tokens)
        self.logits = HookPoint("batch position vocab", "next-token logits", tokens)
        name_hook_points(self)
        self._check_shapes(arch)
        self._install_hooks(arch)

    def part(self, path: str) -> nn.Module:
        """The Hugging Face model's module at `path`; ValueError naming it where there is none."""
        try:
            return self.hf.get_submodule(path)
        except AttributeError:
            raise ValueError(
                f"the {self.base_config.model_type} model has no module {path}: not the layout MemLens reads"
            ) from None

    def down_projection_weight(self, layer: int) -> torch.Tensor:
        return layer_weight(self.part(architecture(self.base_config.model_type).block(layer, "down_proj")))

    def _check_shapes(self, arch: Architecture) -> None:
        c = self.base_config
        blocks = self.part(arch.blocks)
        if not isinstance(blocks, nn.ModuleList) or len(blocks) != c.n_layers:
            raise ValueError(f"{arch.blocks} should be a list of {c.n_layers} blocks")
        down = (c.d_ff, c.d_model) if arch.down_layout == "conv1d" else (c.d_model, c.d_ff)
        for i in range(c.n_layers):
            for part in ("attention", "out_proj", "ff_norm", "mlp"):
                self.part(arch.block(i, part))
            weight = self.down_projection_weight(i)
            if tuple(weight.shape) != down:
                raise ValueError(
                    f"{arch.block(i, 'down_proj')} has a weight of shape {tuple(weight.shape)}; a {arch.down_layout} "
                    f"down projection of d_ff {c.d_ff} and d_model {c.d_model} has {down}"
                )
        head = layer_weight(self.part(arch.lm_head))
        if tuple(head.shape) != (c.vocab_size, c.d_model):
            raise ValueError(
                f"{arch.lm_head} has a weight of shape {tuple(head.shape)}, not {(c.vocab_size, c.d_model)}"
            )
        norm = self.part(arch.final_norm)
        if arch.final_norm_kind == "layer_norm" and not isinstance(norm, nn.LayerNorm):
            raise ValueError(f"{arch.final_norm} is a {type(norm).__name__}, not a LayerNorm")
        if arch.final_norm_kind == "rms_norm" and rms_norm_eps(norm) is None:
            raise ValueError(f"{arch.final_norm} is a {type(norm).__name__}, not an RMS norm with a weight")

    def _install_hooks(self, arch: Architecture) -> None:
        """Hooks on the Hugging Face modules, for the wrapper's lifetime (they cost nothing while no hook point has
        hooks of its own)."""
        for i, layer in enumerate(self.layers):
            assert isinstance(layer, LayerHooks)
            self.part(arch.block(i)).register_forward_pre_hook(InputRoute(layer.resid_pre), with_kwargs=True)
            self.part(arch.block(i, "attention")).register_forward_hook(
                PatternRead(layer.attn.pattern, layer.attn.z.name)
            )
            self.part(arch.block(i, "out_proj")).register_forward_pre_hook(
                InputRoute(ByHeads(layer.attn.z, self.base_config.n_heads)), with_kwargs=True
            )
            if self.parallel_residual:
                after_attention = ParallelResidMid(layer.resid_mid)
                self.part(arch.block(i)).register_forward_pre_hook(after_attention.keep_input, with_kwargs=True)
                self.part(arch.block(i, "attention")).register_forward_hook(after_attention)
            else:
                ff_norm = self.part(arch.block(i, "ff_norm"))
                ff_norm.register_forward_pre_hook(InputRoute(layer.resid_mid), with_kwargs=True)
            self.part(arch.block(i, "down_proj")).register_forward_pre_hook(InputRoute(layer.ff.keys), with_kwargs=True)
            self.part(arch.block(i, "mlp")).register_forward_hook(OutputRoute(layer.ff.out))
        self.part(arch.final_norm).register_forward_hook(OutputRoute(self.out))
        self.part(arch.lm_head).register_forward_hook(OutputRoute(self.logits))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # [b, t] -> [b, t, vocab]
        """Logits at every position for the token that follows it; padding is masked where the pad id is its own
        (right padding: a causal model's real tokens never see it anyway)."""
        mask = self.real_tokens(ids).long() if self.base_config.masks_padding else None  # [b, t] 1: a real token
        return self.hf(input_ids=ids, attention_mask=mask, use_cache=False).logits  # [b, t, vocab]

    def real_tokens(self, ids: torch.Tensor) -> torch.Tensor:  # [b, t] -> [b, t] bool
        """True at every position but padding, where the pad id is its own (else every position)."""
        if not self.base_config.masks_padding:
            return torch.ones_like(ids, dtype=torch.bool)
        return ids != self.base_config.pad_id


class CachedNextToken:
    """The next token's logits with the Hugging Face model's own key/value cache: the first call reads the whole
    prompt, every later call only the tokens added since (the decoding loop appends one per step). The hook
    points see each call's new positions alone, so the step suits hooks that act on each position alone (the
    interventions of a causal LM); a recording pass reads the whole stream afterwards. Rows are never padded
    (one prompt per continuation)."""

    def __init__(self, model: HookedCausalLM):
        from transformers import DynamicCache

        self.model = model
        self.cache = DynamicCache(config=model.hf.config)
        self.seen = 0  # tokens already in the cache

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:  # [rows, t] -> [rows, vocab]
        new = ids[:, self.seen :]  # [rows, t - seen]
        out = self.model.hf(input_ids=new, cache=self.cache, use_cache=True, logits_to_keep=1)
        self.seen = ids.shape[1]
        return out.logits[:, -1]  # [rows, vocab]


def build_hooked(config: HuggingFaceConfig) -> HookedCausalLM:
    """A model of `config` with fresh (random) weights, drawn from torch's generator."""
    return HookedCausalLM(fresh_hf_model(config), config)


def fresh_hf_model(config: HuggingFaceConfig) -> nn.Module:
    """The Hugging Face model of `config`, eager attention, fresh (random) weights."""
    from transformers import AutoModelForCausalLM

    hf_config = transformers_config(config.model_type, config.hf_config)
    refuse_unsupported(architecture(config.model_type), hf_config)
    return AutoModelForCausalLM.from_config(hf_config, attn_implementation="eager", dtype=torch.float32)


def rms_norm_eps(norm: nn.Module) -> float | None:
    """The epsilon of an RMS norm with a weight (Llama's `variance_epsilon`, torch's `eps`); None for another
    module."""
    weight = getattr(norm, "weight", None)
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    if not isinstance(weight, torch.Tensor) or isinstance(norm, nn.LayerNorm):
        return None
    if eps is None and isinstance(norm, nn.RMSNorm):
        return torch.finfo(weight.dtype).eps
    return float(eps) if isinstance(eps, (int, float)) else None


def layer_weight(module: nn.Module) -> torch.Tensor:
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor):
        raise ValueError(f"a {type(module).__name__} has no weight")
    return weight


# The torch hooks are small objects rather than closures, so that a deep copy of the wrapper (hooks and hook points
# copied together) routes the copy's tensors through the copy's hook points.

TensorRoute = Callable[[torch.Tensor], torch.Tensor]  # a tensor -> what replaces it (the same object: nothing)


class InputRoute:
    """A forward pre-hook (with_kwargs) passing a module's tensor input through `route`; a replacement replaces it."""

    def __init__(self, route: TensorRoute):
        self.route = route

    def __call__(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if args and isinstance(args[0], torch.Tensor):
            x = args[0]
            new = self.route(x)
            return None if new is x else ((new, *args[1:]), kwargs)
        key = next((key for key in INPUT_KEYWORDS if isinstance(kwargs.get(key), torch.Tensor)), None)
        if key is None:
            raise RuntimeError(f"a {type(module).__name__} was called without a tensor input the hooks can find")
        x = kwargs[key]
        new = self.route(x)
        return None if new is x else (args, {**kwargs, key: new})


class OutputRoute:
    """A forward hook passing a module's tensor output through `point`; a replacement replaces it."""

    def __init__(self, point: HookPoint):
        self.point = point

    def __call__(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        if not isinstance(output, torch.Tensor):
            raise RuntimeError(f"{self.point.name}: a {type(module).__name__} returned a {type(output).__name__}")
        new = self.point(output)
        return None if new is output else new


class ByHeads:
    """The output projection's input [b, t, h*d_head] (head-major) through `point` as [b, h, t, d_head]."""

    def __init__(self, point: HookPoint, n_heads: int):
        self.point, self.n_heads = point, n_heads

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        b, t, width = x.shape
        z = x.reshape(b, t, self.n_heads, width // self.n_heads).transpose(1, 2)  # [b, h, t, d_head]
        new = self.point(z)
        return x if new is z else new.transpose(1, 2).reshape(b, t, width)  # [b, t, h*d_head]


class ParallelResidMid:
    """A parallel-residual block's resid_mid: its input (kept by `keep_input`, a pre-hook registered after the
    resid_pre route, so it sees that route's edit) plus the attention's output (output[0]), shown to `point` from a
    forward hook on the attention; InterventionError where a hook there replaces it: no module reads it."""

    def __init__(self, point: HookPoint):
        self.point = point
        self.block_input: torch.Tensor | None = None

    def keep_input(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.block_input = args[0] if args else kwargs.get("hidden_states")

    def __call__(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        attention = output[0] if isinstance(output, tuple) else output  # [b, t, d]
        if not isinstance(self.block_input, torch.Tensor) or not isinstance(attention, torch.Tensor):
            raise RuntimeError(f"{self.point.name}: the block's input or its attention output was not seen")
        resid_mid = self.block_input + attention
        self.block_input = None
        if self.point(resid_mid) is not resid_mid:
            raise InterventionError(
                f"{self.point.name} of a parallel-residual block is read, not edited: the FF reads the block input "
                "(edit resid_pre, or the FF's keys)"
            )


class PatternRead:
    """A forward hook showing an attention module's probabilities (output[index], eager attention) to `point`;
    InterventionError where a hook there replaces them: they were applied already. `z` names the hook point to
    scale instead."""

    def __init__(self, point: HookPoint, z: str, index: int = 1):
        self.point, self.z, self.index = point, z, index

    def __call__(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        found = isinstance(output, tuple) and len(output) > self.index
        weights = output[self.index] if found else None  # [b, h, q, k]
        if not isinstance(weights, torch.Tensor):
            raise RuntimeError(
                f"{self.point.name}: the attention returned no probabilities; MemLens runs Hugging Face models with "
                'attn_implementation="eager"'
            )
        if self.point(weights) is not weights:
            raise InterventionError(
                f"attention patterns of a Hugging Face model are read, not edited: scale {self.z} to ablate a head"
            )
