"""The Explore page's and /api/explore's run: one model on one input, plainly and under a lesion, with the
attention of one stack's layer (every call of it, for a model that runs its layers once per segment), the
block mass of every head, and what each head does with memory. Also the one-layer attention of /api/attention
and the attribution of one output token."""

from __future__ import annotations

from dataclasses import dataclass

from app.schemas.api import AttentionRequest, AttributionRequest, ExploreRequest
from app.schemas.validation import InputError, shown
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from app.services.lesion_notes import lesion_note, output_change
from app.services.lesioned import LesionedRun, plain_then_lesioned
from app.services.textdiff import DiffPart, word_diff
from inference.analyses.attention import LayerAttention, attention_stacks, call_indices, layer_attention, pattern_heads
from inference.analyses.blocks import HeadBlocks, attention_blocks
from inference.analyses.memory_operations import MEMORY_OPERATION_HOOKS, HeadOperations, memory_operations
from inference.core.capabilities import Capability
from inference.core.hook_names import EVERY_PATTERN, pattern_hook_name
from inference.core.hooks import hook_points
from inference.core.trace import Trace
from inference.runs.attribution import Attribution, attribute

# Capabilities whose models run a layer more than once, and the index that tells the calls apart.
CALL_AXES = {Capability.SEGMENTS: "segment"}


@dataclass(frozen=True)
class ExploreControls:
    """What the view controls and the head-ablation field offer for one model, from what it can do and its hook
    points (the lesion kinds' controls: app/services/lesion_forms.py)."""

    stacks: dict[str, int]  # stack -> layers
    heads: int  # the most heads of any attention layer
    call_axis: str | None  # "segment" for a model that runs its layers once per segment
    ablate_example: str  # the head-ablation field's placeholder, in this model's own attention names


def explore_controls(model: PageModel) -> ExploreControls:
    call_axis = next((axis for capability, axis in CALL_AXES.items() if model.can(capability)), None)
    network = model.loaded.model
    hooks = list(hook_points(network))
    heads = pattern_heads(network)
    return ExploreControls(attention_stacks(network), heads, call_axis, ablation_example(hooks, heads))


def ablation_example(hooks: list[str], heads: int) -> str:
    """Two head ablations written as the field reads them, from the model's own attention modules (those with
    per-head outputs, `<module>.z`): its first and its last, e.g. "layers.0.attn:1, layers.29.attn:8"."""
    modules = [hook.removesuffix(".z") for hook in hooks if hook.endswith(".z")]
    if not modules:
        return ""
    first, last = modules[0], modules[-1]
    examples = [f"{first}:{min(1, heads - 1)}"] + ([f"{last}:{heads - 1}"] if last != first else [])
    return ", ".join(examples)


def pattern_hook(model: PageModel, stack: str, layer: int) -> str:
    """The hook of one stack's layer, or an InputError naming what the model has."""
    stacks = attention_stacks(model.loaded.model)
    if stack not in stacks:
        raise InputError(f"unknown stack {shown(stack)}; this model has {', '.join(stacks)}")
    if layer >= stacks[stack]:
        raise InputError(f"layer {layer} is out of range for {stack} (0 to {stacks[stack] - 1})")
    return pattern_hook_name(hook_points(model.loaded.model), stack, layer)


def continuation_budget(gateway: ModelGateway, model: PageModel, new_tokens: int | None) -> int | None:
    """The tokens a language model continues the text by (`new_tokens`, None: the default; None for a translator:
    the full output budget); an InputError where a translator is asked for a continuation, or the budget is out of
    range."""
    if not model.can(Capability.GENERATES_TEXT):
        if new_tokens is not None:
            raise InputError(f"{model.name} translates; new_tokens is for a model that continues a text")
        return None
    return gateway.limits.continuation(new_tokens)


@dataclass(frozen=True)
class ExploreRun:
    runs: LesionedRun
    stack: str
    calls: list[LayerAttention]  # the shown run's layer, one per call
    view: LayerAttention  # the call on view
    blocks: list[HeadBlocks]  # of the shown run
    operations: list[HeadOperations]  # of the shown run's stack; empty for a model without memory tokens
    diff: list[DiffPart]  # the shown output against the plain one
    note: str  # the lesion in words and what it changed


def run_explore(gateway: ModelGateway, model: PageModel, request: ExploreRequest) -> ExploreRun:
    """Run with and without the request's interventions; the attention views follow the lesioned run."""
    controls = explore_controls(model)
    stack = request.stack or next(iter(controls.stacks), "")
    name = pattern_hook(model, stack, request.layer)  # an unknown stack or layer is refused before the run
    memory = model.can(Capability.MEMORY_TOKENS)
    names = MEMORY_OPERATION_HOOKS if memory else [EVERY_PATTERN]
    budget = continuation_budget(gateway, model, request.new_tokens)

    def check(plain: Trace) -> None:  # a segment lesion within the segments the plain run read
        if model.can(Capability.SEGMENTS):
            request.interventions.check_within({"segments": len(call_indices(plain.captures[name]))})

    runs = plain_then_lesioned(
        gateway,
        model.loaded,
        request.text,
        request.interventions,
        names,
        decoding=request.decoding,
        max_new_tokens=budget,
        check=check,
    )
    shown_run = runs.shown
    calls = [layer_attention(shown_run, stack, request.layer, **at) for at in call_indices(shown_run.captures[name])]
    if request.call >= len(calls):
        raise InputError(f"{controls.call_axis or 'call'} {request.call} is out of range (0 to {len(calls) - 1})")
    view = calls[request.call]
    if request.head >= view.weights.shape[0]:
        raise InputError(f"head {request.head} is out of range (0 to {view.weights.shape[0] - 1})")
    diff = word_diff(runs.plain.outputs[0], shown_run.outputs[0])
    outcome = output_change(diff) if model.can(Capability.TRANSLATES) or model.can(Capability.GENERATES_TEXT) else None
    return ExploreRun(
        runs=runs,
        stack=stack,
        calls=calls,
        view=view,
        blocks=attention_blocks(shown_run),
        operations=[h for h in memory_operations(shown_run) if h.stack == stack] if memory else [],
        diff=diff,
        note=lesion_note(request.interventions, model.loaded.config.memory_size, outcome),
    )


def one_layer(
    gateway: ModelGateway, model: PageModel, request: AttentionRequest
) -> tuple[Trace, LayerAttention, list[dict[str, int]]]:
    """One call (`request.at`) of one stack's layer in the run under the request's interventions, capturing that
    layer only: (the run, the layer's attention, every call the layer has)."""
    name = pattern_hook(model, request.stack, request.layer)
    budget = continuation_budget(gateway, model, None)
    trace = gateway.trace(
        model.loaded, request.text, request.interventions, [name], decoding=request.decoding, max_new_tokens=budget
    )
    calls = call_indices(trace.captures[name])
    at = request.at
    if at not in calls:
        raise InputError(f"{name} has no call {at or 'without an index'}; its calls: {calls}")
    return trace, layer_attention(trace, request.stack, request.layer, **at), calls


def attribution(gateway: ModelGateway, model: PageModel, request: AttributionRequest) -> Attribution:
    """Integrated gradients and saliency of output token `request.position` onto source tokens and memory slots."""
    text = gateway.check_text(model.loaded, request.text)
    return gateway.exclusive(
        lambda: attribute(model.loaded, text, request.position, request.interventions, decoding=request.decoding)
    )
