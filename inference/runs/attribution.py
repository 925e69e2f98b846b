"""Which source tokens and which memory slots an output token depends on:
Captum's integrated gradients and saliency with respect to the encoder's
input vectors (embedded source tokens and memory vectors).

The target is the logit of one token of the model's own translation,
teacher-forced on the translation before it. Integrated gradients start from
a baseline of zero vectors (no token, empty memory); Captum evaluates the
path in chunks of `internal_batch_size`, which bounds memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from inference.core.applied_interventions import applied_interventions
from inference.core.decoding import GREEDY, Decoding, pad_batch
from inference.core.family import LoadedModel
from inference.core.hook_names import LOGITS
from inference.core.interventions import NO_INTERVENTIONS, Interventions
from inference.core.refusals import InputRefused
from inference.core.tracing import encode_sources, run_with_trace
from inference.layers import EncoderOutput


@runtime_checkable
class MemoryEncoderDecoder(Protocol):
    """What attribution needs of a model (the families with Capability.ATTRIBUTION): its encoder run from input
    vectors, memory slots in front of the embedded source."""

    @property
    def embed(self) -> Callable[[torch.Tensor], torch.Tensor]: ...  # src ids [b, n] -> [b, n, d]

    def memory_vectors(self, memory_size: int) -> torch.Tensor: ...  # [memory_size, d]

    def encode_embedded(
        self, x_mem: torch.Tensor, x_seq: torch.Tensor, seq_key_mask: torch.Tensor
    ) -> EncoderOutput: ...

    def decode(self, tgt_in: torch.Tensor, encoded: EncoderOutput) -> torch.Tensor: ...  # [b, t] -> [b, t, vocab]


@dataclass
class Attribution:
    position: int  # index of the output token in the translation (0 = first token)
    token: str
    source_tokens: list[str]
    memory_slots: list[str]
    integrated_gradients_source: list[float]  # per position: sum over d of the attribution, signed
    integrated_gradients_memory: list[float]
    saliency_source: list[float]  # per position: L2 norm of the gradient
    saliency_memory: list[float]
    convergence_delta: float  # IG completeness error: sum of attributions minus (f(x) - f(baseline))
    translation_tokens: list[str]


def attribute(
    loaded: LoadedModel,
    text: str,
    position: int,
    interventions: Interventions | None = None,
    n_steps: int = 32,
    internal_batch_size: int = 16,
    decoding: Decoding = GREEDY,
) -> Attribution:
    """Attribution of output token `position` of the model's own translation
    (decoded by `decoding`) onto source tokens and memory slots."""
    from captum.attr import IntegratedGradients, Saliency  # imported when used: 0.7 s off the server's start

    model, config, tokenizer = loaded.model, loaded.config, loaded.tokenizer
    if not isinstance(model, MemoryEncoderDecoder):
        raise TypeError(f"a {type(model).__name__} does not run its encoder from memory and source vectors")
    interventions = interventions or NO_INTERVENTIONS
    trace = run_with_trace(loaded, text, names=[LOGITS], interventions=interventions, decoding=decoding)
    target_ids = trace.output_ids[0] + [config.eos_id]  # what each decoder position predicts
    if not 0 <= position < len(target_ids):
        raise InputRefused(f"output position {position} is out of range (0 to {len(target_ids) - 1})")
    src_ids = encode_sources(loaded, [text])  # [1, n]
    tgt_in = pad_batch([[config.bos_id] + trace.output_ids[0]], config.pad_id, loaded.device)[
        :, : position + 1
    ]  # [1, position+1]
    token_id = target_ids[position]

    with applied_interventions(model, interventions) as memory_size:
        x_seq = model.embed(src_ids).detach()  # [1, n, d]
        x_mem = model.memory_vectors(memory_size).unsqueeze(0).detach()  # [1, m, d]
        seq_mask = src_ids != config.pad_id

        def token_logit(seq: torch.Tensor, mem: torch.Tensor) -> torch.Tensor:  # [k, n, d], [k, m, d] -> [k]
            k = seq.shape[0]
            encoded = model.encode_embedded(mem, seq, seq_mask.expand(k, -1))
            return model.decode(tgt_in.expand(k, -1), encoded)[:, position, token_id]

        integrated, delta = IntegratedGradients(token_logit).attribute(
            (x_seq, x_mem),
            baselines=(torch.zeros_like(x_seq), torch.zeros_like(x_mem)),
            n_steps=n_steps,
            internal_batch_size=internal_batch_size,
            return_convergence_delta=True,
        )
        gradients = Saliency(token_logit).attribute(
            (x_seq.clone().requires_grad_(), x_mem.clone().requires_grad_()), abs=True
        )

    return Attribution(
        position=position,
        token=tokenizer.display_tokens([token_id])[0],
        source_tokens=tokenizer.display_tokens(src_ids[0].tolist()),
        memory_slots=[f"[mem{j}]" for j in range(memory_size)],
        integrated_gradients_source=integrated[0][0].sum(-1).tolist(),
        integrated_gradients_memory=integrated[1][0].sum(-1).tolist(),
        saliency_source=gradients[0][0].norm(dim=-1).tolist(),
        saliency_memory=gradients[1][0].norm(dim=-1).tolist(),
        convergence_delta=float(delta.abs().max()),
        translation_tokens=tokenizer.display_tokens(target_ids),
    )
