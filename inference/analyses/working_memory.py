"""Views of one working-memory trace (paper 004): the generated stream with
its memory tokens, every step's decision, and how target tokens attend to
the memory. Pure functions of a `Trace` from `run_with_trace`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from inference.analyses.attention import layer_attention
from inference.core.axes import AxisRole
from inference.core.hook_names import DECODER_SELF_ATTENTION, WORKING_MEMORY_WRITTEN
from inference.core.interventions import Interventions
from inference.core.memory_decisions import CHOICE_COLUMN, MEMORY_TYPE, ForcesMemory, MasksMemory
from inference.core.tokenizer import TextTokenizer
from inference.core.trace import Role, Trace


@dataclass
class StreamToken:
    token: str  # display form
    kind: str  # "memory" or "target"


@dataclass
class StepDecision:
    step: int  # 1-based element of the stream (BOS is element 0)
    p_memory: float  # type-head probability of writing memory next
    kind: str  # "memory" or "target": what was written
    token: str  # display form of the written token
    token_id: int
    nucleus_size: int  # tokens in the top-p nucleus the memory token was drawn from; 0 for target tokens
    overridden: bool  # the head asked for memory but the memory was full
    forced: bool  # written by forced_memory, not chosen by the type head


@dataclass
class MemoryAttention:
    layer: int
    weights: torch.Tensor  # [heads, target queries, memory keys] of decoder self-attention
    query_tokens: list[str]  # the target-type positions (BOS included: it predicts the first element)
    key_tokens: list[str]  # the memory tokens, in writing order

    @property
    def mass(self) -> torch.Tensor:  # [heads]: mean attention of a target query on all memory keys together
        return self.weights.sum(dim=-1).mean(dim=-1)


DECISIONS = WORKING_MEMORY_WRITTEN  # one call per generated element: the decision as written


def require_working_memory(trace: Trace) -> torch.Tensor:  # [b, steps, 7]
    """Every step's decision record (CHOICE_COLUMNS), per example."""
    capture = trace.captures.get(DECISIONS)
    if capture is None or not capture.calls:
        raise ValueError(f"{trace.run.model} is not a working-memory model: its trace has no memory decisions")
    records, _ = capture.stacked()  # [steps, b, 7]
    return records.transpose(0, 1)


def stream_tokens(trace: Trace, example: int = 0) -> list[StreamToken]:
    """The generated stream after BOS: every element, memory or target, in order."""
    require_working_memory(trace)
    target = trace.axis_with(AxisRole.TARGET)
    pairs = zip(trace.tokens[target][example], trace.roles[target][example])
    return [
        StreamToken(token, "memory" if role == Role.WM else "target")
        for token, role in list(pairs)[1:]
        if role != Role.PAD
    ]


def memory_tokens(trace: Trace, example: int = 0) -> list[str]:
    return [t.token for t in stream_tokens(trace, example) if t.kind == "memory"]


def forced_tokens(interventions: Interventions) -> tuple[int, ...]:
    """The token ids a lesion forces as the memory (`ForcesMemory`), in order; () where none does."""
    return next((item.forced_tokens for item in interventions if isinstance(item, ForcesMemory)), ())


def masks_memory(interventions: Interventions) -> bool:
    """Whether a lesion keeps target elements from attending memory elements (`MasksMemory`)."""
    return any(isinstance(item, MasksMemory) for item in interventions)


def step_decisions(trace: Trace, tokenizer: TextTokenizer, example: int = 0) -> list[StepDecision]:
    """One row per generated element, up to the example's end."""
    records = require_working_memory(trace)[example]  # [steps, 7]
    active = records[:, CHOICE_COLUMN["active"]] == 1
    records = records[active]
    ids = records[:, CHOICE_COLUMN["token"]].round().long().tolist()
    shown = tokenizer.display_tokens(ids)
    n_forced = len(forced_tokens(trace.run.interventions))  # forced memory is the first elements of the stream
    return [
        StepDecision(
            step=i + 1,
            p_memory=float(row[CHOICE_COLUMN["p_memory"]]),
            kind="memory" if int(row[CHOICE_COLUMN["type"]]) == MEMORY_TYPE else "target",
            token=shown[i],
            token_id=ids[i],
            nucleus_size=int(row[CHOICE_COLUMN["nucleus_size"]]),
            overridden=bool(row[CHOICE_COLUMN["overridden"]]),
            forced=i < n_forced,
        )
        for i, row in enumerate(records)
    ]


def target_to_memory_attention(trace: Trace, layer: int, example: int = 0) -> MemoryAttention:
    """Decoder self-attention of layer `layer` from target-type queries onto memory keys."""
    require_working_memory(trace)
    view = layer_attention(trace, DECODER_SELF_ATTENTION, layer, example)
    queries = [i for i, role in enumerate(view.query_roles) if role != Role.WM]
    keys = [i for i, role in enumerate(view.key_roles) if role == Role.WM]
    return MemoryAttention(
        layer=layer,
        weights=view.weights[:, queries][:, :, keys],
        query_tokens=[view.query_tokens[i] for i in queries],
        key_tokens=[view.key_tokens[i] for i in keys],
    )
