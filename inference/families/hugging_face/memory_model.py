"""Recurrent memory added to a pretrained causal language model, the way paper 002 adds it to any transformer
(its Hugging Face wrapper): m trainable memory embeddings, read at the start and written at the end of every
segment, the written copy carried to the next segment.

A segment of L tokens is read as one pass of the unchanged pretrained model over input embeddings

    [memory ; embed(segment tokens) ; memory]        m + L + m positions, position ids 0 .. L+2m-1

with the model's own causal attention (the Hugging Face wrapper's choice: read slots see the read slots before
them, tokens see the read block and the tokens before them, the write block sees everything). The next memory is
the write block's final hidden states (after the final norm, what the LM head reads). Memory positions take
position ids, so segment_length + 2m must fit the model's positions.

Backpropagation through time (`bptt_depth`): 0 detaches the memory at every segment boundary, k > 0 lets
gradients flow through k handoffs (inference.core.segment_memory.handed_on), -1 never cuts. `carry_memory` false
is the control: the memory is reset to the trained initial embeddings at every segment, so memory tokens are a
learned prefix and nothing passes between segments.

Initial memory: randn(m, d) x the standard deviation of the token embeddings (the Hugging Face wrapper's). A lesion
asking for another memory size cycles the trained vectors.

Hook points: the pretrained model's (inference.families.hugging_face.model), called once per segment (call index
`segment`), queries on the axis "seg" (read memory, tokens, write memory), keys on "ctx" (the same positions: no
cache), `layers.{i}.attn.mask` (read only: the causal mask over the keys), and

    memory.read     [batch slot d_model]   memory entering the segment
    memory.keys     [batch key]            which positions every query may read (bool): the knock-out lesion's
    memory.write    [batch slot d_model]   memory leaving the segment (next segment's read)
    logits          [batch position vocab] per segment, over the "seg" axis
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch
from torch import nn

from inference.core.hooks import HookPoint, call_scope, name_hook_points
from inference.core.interventions import InterventionError
from inference.core.segment_memory import KEY_AXIS, QUERY_AXIS, handed_on, memory_tokens_text
from inference.families.hugging_face.model import HookedCausalLM, HuggingFaceConfig

FAMILY_NAME = "pretrained_memory"


@dataclass
class PretrainedMemoryConfig:
    """`base`: the pretrained model's HuggingFaceConfig as a dict; vocabulary and special ids are its own (kept here
    too, as every family's config holds them)."""

    base: dict[str, Any] = field(default_factory=dict)
    memory_size: int = 10  # m memory tokens, read and written
    segment_length: int = 50  # tokens per segment
    bptt_depth: int = -1  # memory handoffs gradients flow through: 0 detach, -1 all
    carry_memory: bool = True  # False: the memory is reset at every segment (the control)
    max_positions: int = 4096  # tokens of a whole input, all segments
    vocab_size: int = 0
    pad_id: int = 0
    bos_id: int = 0
    eos_id: int = 0
    family: str = FAMILY_NAME

    def __post_init__(self) -> None:
        if self.family != FAMILY_NAME:
            raise ValueError(f"PretrainedMemoryConfig has family {FAMILY_NAME!r}, not {self.family!r}")
        base = self.base_config  # ValueError where the base is no supported causal LM
        self.vocab_size, self.pad_id, self.bos_id, self.eos_id = base.vocab_size, base.pad_id, base.bos_id, base.eos_id
        if self.memory_size < 1 or self.segment_length < 1:
            raise ValueError("memory_size and segment_length must be at least 1")
        if self.bptt_depth < -1:
            raise ValueError(f"bptt_depth is -1 (all), 0 (detach) or a number of segments, got {self.bptt_depth}")
        if self.segment_length + 2 * self.max_memory_size > base.max_positions:
            raise ValueError(
                f"a segment of {self.segment_length} tokens and 2 x {self.max_memory_size} memory positions (twice the "
                f"trained memory, the largest a lesion asks for) exceed the model's {base.max_positions} positions"
            )
        if self.max_positions < self.segment_length:
            raise ValueError("max_positions must hold a segment")

    @cached_property  # the config is never changed after it is made; the training loop asks for d_model every step
    def base_config(self) -> HuggingFaceConfig:
        if not isinstance(self.base, dict) or self.base.get("family", "hugging_face") != "hugging_face":
            raise ValueError("base must be a Hugging Face causal language model's config")
        try:
            return HuggingFaceConfig(**self.base)
        except TypeError as error:
            raise ValueError(f"base: {error}") from None

    @property
    def max_memory_size(self) -> int:
        """Largest memory a lesion may ask for: twice the trained size."""
        return 2 * self.memory_size

    @property
    def d_model(self) -> int:
        return self.base_config.d_model

    @property
    def cache_length(self) -> int:
        return 0  # no Transformer-XL cache: what passes between segments is the memory

    @property
    def memory_setup(self) -> str:
        kept = "carried" if self.carry_memory else "reset at every segment"
        return f"RMT on a pretrained {self.base_config.model_type}, {memory_tokens_text(self.memory_size)}, {kept}"


class MemoryHookPoints(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.read = HookPoint("batch slot d_model", "memory entering a segment")
        self.keys = HookPoint("batch key", "positions every query of a segment may read (bool)", {"key": KEY_AXIS})
        self.write = HookPoint("batch slot d_model", "memory leaving a segment: the write block's final states")


class MemoryAugmentedLM(HookedCausalLM):
    """A HookedCausalLM reading its input segment by segment with memory tokens (module doc)."""

    config: PretrainedMemoryConfig  # type: ignore[assignment]  # the family's; the Hugging Face model's is base_config

    def __init__(self, hf: nn.Module, config: PretrainedMemoryConfig):
        super().__init__(hf, config.base_config, (QUERY_AXIS, KEY_AXIS))
        self.config = config
        embeddings = self.hf.get_input_embeddings().weight.detach()  # [vocab, d]
        drawn = torch.randn(config.memory_size, embeddings.shape[1], device=embeddings.device, dtype=embeddings.dtype)
        self.memory_init = nn.Parameter(drawn * embeddings.std())  # [m, d]
        self.masks: list[HookPoint] = []  # layers.{i}.attn.mask: what every attention of a segment may see
        for i in range(len(self.layers)):
            mask = HookPoint(
                "batch head query key",
                "positions each query may attend (read only: knock a slot out at memory.keys)",
                {"query": QUERY_AXIS, "key": KEY_AXIS},
            )
            self.get_submodule(f"layers.{i}.attn").add_module("mask", mask)
            self.masks.append(mask)
        self.memory = MemoryHookPoints()
        name_hook_points(self)

    def initial_memory(self, batch: int, memory_size: int) -> torch.Tensor:  # [b, m, d]
        index = torch.arange(memory_size, device=self.memory_init.device) % self.memory_init.shape[0]
        return self.memory_init[index].unsqueeze(0).expand(batch, -1, -1)

    def segment(self, memory: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One segment: memory [b, m, d], ids [b, L] -> (logits [b, m+L+m, vocab], new memory [b, m, d])."""
        m, length = memory.shape[1], ids.shape[1]
        if m:
            memory = self.memory.read(memory)
        tokens = self.hf.get_input_embeddings()(ids)  # [b, L, d]
        x = torch.cat([memory, tokens, memory], dim=1)  # [b, m+L+m, d]
        real = self.real_tokens(ids)  # [b, L]
        keys = torch.cat([real.new_ones(ids.shape[0], m), real, real.new_ones(ids.shape[0], m)], dim=1)  # [b, n]
        keys = self.memory.keys(keys)
        self._show_masks(keys)
        out = self.hf(inputs_embeds=x, attention_mask=keys.long(), use_cache=False, output_hidden_states=True)
        if m:
            memory = self.memory.write(out.hidden_states[-1][:, m + length :])  # [b, m, d]
        return out.logits, memory

    def _show_masks(self, keys: torch.Tensor) -> None:  # keys [b, n] bool
        """Each layer's `attn.mask` sees the segment's causal mask over the keys [b, 1, n, n]; InterventionError where
        a hook replaces it: the Hugging Face model builds its own mask from `memory.keys`."""
        n = keys.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool, device=keys.device).tril()[None, None] & keys[:, None, None, :]
        for point in self.masks:
            if point(mask) is not mask:
                raise InterventionError(
                    "attention masks of a pretrained model are read, not edited: knock a memory slot out at memory.keys"
                )

    def forward(self, ids: torch.Tensor, memory_size: int | None = None) -> torch.Tensor:  # [b, n] -> [b, n, vocab]
        """Next-token logits of every token, read segment by segment (`read`'s first part)."""
        return self.read(ids, memory_size)[0]

    def read(
        self, ids: torch.Tensor, memory_size: int | None = None, memory: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [b, n] -> (logits [b, n, vocab] of the tokens, the memory after the last segment [b, m, d]);
        `memory` [b, m, d]: start from it instead of the initial memory."""
        c = self.config
        m = c.memory_size if memory_size is None else memory_size
        initial = self.initial_memory(ids.shape[0], m)
        memory = initial if memory is None else memory
        outputs = []
        for s, start in enumerate(self.segment_starts(ids.shape[1])):
            if s:
                memory = handed_on(memory, s, c.bptt_depth) if c.carry_memory else initial
            with call_scope(segment=s):
                logits, memory = self.segment(memory, ids[:, start : start + c.segment_length])
            outputs.append(logits[:, m : logits.shape[1] - m])
        return torch.cat(outputs, dim=1), memory

    def segment_starts(self, length: int) -> range:
        return range(0, length, self.config.segment_length)

    def cached_length(self, segment: int) -> int:
        return 0
