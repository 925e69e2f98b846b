"""The Segments page's and /api/segments's run: a model that reads its input segment by segment, plainly and
under memory lesions by segment, with where the segments lie, which next tokens each run gets right, one
segment's attention, and the memory's path across segments."""

from __future__ import annotations

from dataclasses import dataclass

from app.schemas.api import SegmentsRequest
from app.schemas.validation import InputError
from app.services.explore import pattern_hook
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.lesion_notes import lesion_note, output_change
from app.services.lesioned import LesionedRun, plain_then_lesioned
from app.services.textdiff import word_diff
from inference.analyses.attention import LayerAttention, attention_stacks, layer_attention, pattern_heads
from inference.analyses.memory_operations import MEMORY_OPERATION_HOOKS, HeadOperations, memory_operations
from inference.analyses.segments import (
    MemoryPath,
    NextTokenHits,
    SegmentSpans,
    memory_path,
    next_token_hits,
    segment_spans,
)
from inference.core.capabilities import Capability
from inference.core.hook_names import EVERY_PATTERN
from inference.core.segment_memory import segment_setup
from inference.core.trace import Trace


@dataclass(frozen=True)
class SegmentControls:
    """What the page offers for one model, from what it can do, its hook points and its checkpoint's meta."""

    described: str  # the model in words
    memory: bool  # it carries memory tokens (the lesions apply)
    cache: bool  # it attends to cached states of earlier segments
    stack: str  # its attention stack
    layers: int
    heads: int
    task: str | None  # the task it was trained on; None: language modelling


def segment_hooks(memory: bool) -> list[str]:
    """The hooks a run's views read: with memory tokens, the patterns and masks of what each head does with
    memory; without, the attention patterns."""
    return MEMORY_OPERATION_HOOKS if memory else [EVERY_PATTERN]


def segment_controls(model: PageModel) -> SegmentControls:
    network = model.loaded.model
    stack, layers = next(iter(attention_stacks(network).items()))
    return SegmentControls(
        described=segment_setup(model.loaded.config) or model.loaded.family.title,
        memory=model.can(Capability.MEMORY_TOKENS),
        cache=model.can(Capability.SEGMENT_CACHE),
        stack=stack,
        layers=layers,
        heads=pattern_heads(network),
        task=model.record.task,
    )


@dataclass(frozen=True)
class SegmentsRun:
    runs: LesionedRun
    controls: SegmentControls
    tokens: list[str]  # the input's display tokens
    spans: SegmentSpans
    plain_hits: NextTokenHits | None  # None: a decoded output, not a prediction per position
    lesioned_hits: NextTokenHits | None  # None: no lesion, or a decoded output
    view: LayerAttention  # the shown run's segment on view
    path: MemoryPath | None  # the memory's path over the input; None: no memory in force
    operations: list[HeadOperations]  # what each head does with memory; empty without memory
    note: str  # the lesion in words and what it changed


def run_segments(gateway: ModelGateway, model: PageModel, request: SegmentsRequest) -> SegmentsRun:
    """Run plainly and, when a lesion is set, lesioned; the views follow the lesioned run."""
    controls = segment_controls(model)
    pattern = pattern_hook(model, controls.stack, request.layer)  # an unknown layer is refused before the run
    if request.head >= controls.heads:
        raise InputError(f"head {request.head} is out of range (0 to {controls.heads - 1})")
    lesion = request.interventions  # knock-out, reset, noise, transplant, the family's own

    def check(plain: Trace) -> None:  # a lesion changes what segments hold, not where they lie
        count = len(segment_spans(plain, pattern).starts)
        if request.segment >= count:
            raise InputError(f"segment {request.segment} is out of range: this input has {count} (0 to {count - 1})")
        lesion.check_within({"segments": count})

    runs = plain_then_lesioned(gateway, model.loaded, request.text, lesion, segment_hooks(controls.memory), check=check)
    plain, shown = runs.plain, runs.shown
    tokenizer, bos = model.loaded.tokenizer, model.loaded.config.bos_id
    ids = tokenizer.encode(plain.sources[0])
    predicts_each_position = not plain.decoded and len(plain.output_ids[0]) == len(ids)  # else: a decoded output
    plain_hits = next_token_hits(ids, plain.output_ids[0], bos) if predicts_each_position else None
    lesioned_hits = None
    if runs.lesioned is not None and plain_hits is not None:
        lesioned_hits = next_token_hits(ids, runs.lesioned.output_ids[0], bos)
    memory_in_force = controls.memory and shown.run.memory_size > 0
    return SegmentsRun(
        runs=runs,
        controls=controls,
        tokens=tokenizer.display_tokens(ids),
        spans=segment_spans(plain, pattern),
        plain_hits=plain_hits,
        lesioned_hits=lesioned_hits,
        view=layer_attention(shown, controls.stack, request.layer, segment=request.segment),
        path=memory_path(shown, pattern, request.layer, len(ids)) if memory_in_force else None,
        operations=memory_operations(shown) if memory_in_force else [],
        note=lesion_note(lesion, shown.run.config.memory_size, outcome_change(runs, plain_hits, lesioned_hits)),
    )


def outcome_change(runs: LesionedRun, plain_hits: NextTokenHits | None, lesioned_hits: NextTokenHits | None) -> str:
    """What a lesion did: how many scored positions changed outcome, or (a decoded output) which words changed."""
    if plain_hits is None or lesioned_hits is None:
        return output_change(word_diff(runs.plain.outputs[0], runs.shown.outputs[0]))
    changed = sum(a != b for a, b in zip(plain_hits.hits, lesioned_hits.hits) if a is not None)
    scored = sum(a is not None for a in plain_hits.hits)
    return "no position changed outcome" if not changed else f"{changed} of {scored} positions changed outcome, marked"
