"""The Working memory page's and /api/memory's run (paper 004): one sentence's memory inline with its
translation, the decoder's step-by-step decisions and target-to-memory attention, plainly and under the memory
lesions, with what a lesion did (or why it could not) in words."""

from __future__ import annotations

from dataclasses import dataclass

from app.schemas.validation import InputError
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.lesioned import plain_then_lesioned
from app.services.textdiff import DiffPart, word_diff
from inference.analyses.attention import attention_stacks
from inference.analyses.working_memory import (
    MemoryAttention,
    StepDecision,
    StreamToken,
    forced_tokens,
    masks_memory,
    step_decisions,
    stream_tokens,
    target_to_memory_attention,
)
from inference.core.hook_names import DECODER_SELF_ATTENTION, EVERY_PATTERN
from inference.core.interventions import Interventions
from inference.core.trace import Trace


@dataclass
class MemoryView:
    """One sentence through a working-memory model."""

    trace: Trace
    stream: list[StreamToken]
    steps: list[StepDecision]
    attention: MemoryAttention

    @property
    def memory_count(self) -> int:
        return sum(1 for t in self.stream if t.kind == "memory")


@dataclass(frozen=True)
class MemoryLesion:
    """The working-memory lesions asked for, as the page says them."""

    memory_size: int | None  # None: as trained
    mask: bool
    forced: tuple[int, ...]  # token ids that are the whole memory

    @classmethod
    def of(cls, interventions: Interventions) -> MemoryLesion:
        return cls(interventions.memory_size, masks_memory(interventions), forced_tokens(interventions))


@dataclass(frozen=True)
class MemoryRun:
    plain: MemoryView
    lesioned: MemoryView | None  # None: no lesion asked
    lesion: MemoryLesion
    diff: list[DiffPart]  # the lesioned translation against the plain one
    outcome: str | None  # what the lesion did, in words; None: no lesion
    no_memory: str | None  # why memory controls have nothing to act on, where the plain run wrote none
    attention_note: str | None  # why the attention to memory is empty or zero, where it is

    @property
    def shown(self) -> MemoryView:
        return self.lesioned or self.plain


def run_memory(
    gateway: ModelGateway, model: PageModel, text: str, lesion: Interventions, seed: int, layer: int
) -> MemoryRun:
    """The unlesioned run and, when a lesion is set, the lesioned one; the views follow the lesioned run."""
    layers = attention_stacks(model.loaded.model)[DECODER_SELF_ATTENTION]
    if not 0 <= layer < layers:
        raise InputError(f"layer {layer} is out of range (0 to {layers - 1})")
    runs = plain_then_lesioned(gateway, model.loaded, text, lesion, [EVERY_PATTERN], seed=seed)

    def view(trace: Trace) -> MemoryView:
        tokenizer = model.loaded.tokenizer
        return MemoryView(
            trace, stream_tokens(trace), step_decisions(trace, tokenizer), target_to_memory_attention(trace, layer)
        )

    plain = view(runs.plain)
    lesioned = view(runs.lesioned) if runs.lesioned is not None else None
    asked = MemoryLesion.of(lesion)
    shown = lesioned or plain
    return MemoryRun(
        plain=plain,
        lesioned=lesioned,
        lesion=asked,
        diff=word_diff(plain.trace.outputs[0], shown.trace.outputs[0]),
        outcome=lesion_outcome(plain, lesioned, asked) if lesioned is not None else None,
        no_memory=no_memory_note(plain, seed),
        attention_note=attention_note(shown, asked),
    )


def lesion_outcome(plain: MemoryView, lesioned: MemoryView, lesion: MemoryLesion) -> str:
    """What the lesion did to the run, in words: what changed, or why nothing could."""
    before, after = plain.memory_count, lesioned.memory_count
    if plain.trace.outputs[0] != lesioned.trace.outputs[0]:
        return (
            f"The translation changed (memory: {before} tokens without the lesion, {after} with it); "
            "differences marked."
        )
    same_stream = [(t.token, t.kind) for t in plain.stream] == [(t.token, t.kind) for t in lesioned.stream]
    if not same_stream:
        return f"The memory changed ({before} tokens without the lesion, {after} with it), but the translation did not."
    if before == 0 and not lesion.forced:
        return "Nothing changed: this input wrote no memory tokens, so memory size and mask have nothing to act on."
    reasons = []
    if lesion.memory_size is not None and not lesion.forced:
        reasons.append(f"the model wrote {before} memory tokens, which a memory of {lesion.memory_size} holds as well")
    if lesion.mask:
        reasons.append("with the memory masked the target tokens come out the same")
    if lesion.forced:
        reasons.append("the forced memory is the memory the model wrote itself")
    return "Nothing changed: " + "; ".join(reasons) + "."


def no_memory_note(plain: MemoryView, seed: int) -> str | None:
    if plain.memory_count:
        return None
    return (
        f"This input wrote no memory tokens with seed {seed}: "
        "memory size, mask, seed and the attention view have nothing to act on. "
        "Force memory writes memory anyway, or pick an example sentence that writes memory."
    )


def attention_note(view: MemoryView, lesion: MemoryLesion) -> str | None:
    """Why the target-to-memory attention is empty or zero, when it is."""
    if not view.attention.key_tokens:
        return (
            "No attention to memory to show: this run wrote no memory tokens, "
            "so target tokens have no memory to attend to."
        )
    if lesion.mask:
        return (
            "The memory is masked: target tokens may not attend to it, "
            "so their attention on memory is 0% by construction."
        )
    return None
