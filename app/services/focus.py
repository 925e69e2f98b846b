"""The Focus page's and /api/focus's run: for each model, integrated
gradients of its output onto its source and, where it attends to its source,
its attention, as one Focus."""

from __future__ import annotations

from dataclasses import dataclass

from app.schemas.validation import InputError
from app.services.gateway import ModelGateway
from app.services.gating import PageModel, page_model
from app.services.pages import FOCUS
from inference.analyses.attention import layer_attention
from inference.analyses.focus import Focus, focus, source_attention_stack
from inference.analyses.source_attribution import SourceAttribution
from inference.core.hook_names import EVERY_PATTERN, LOGITS
from inference.core.interventions import NO_INTERVENTIONS
from inference.runs.source_attribution import source_attribution

MAX_ATTRIBUTED_SOURCE = 24  # source tokens of a whole-output attribution
MAX_ATTRIBUTED_OUTPUTS = 24  # output tokens it attributes (the maps' rows)


@dataclass(frozen=True)
class ModelFocus:
    model: str
    output: str
    attribution: SourceAttribution
    focus: Focus
    attention_stack: str | None  # the attention shown, e.g. "cross_attn layer 0"; None: the model does not attend


def attributable_text(gateway: ModelGateway, model: PageModel, text: str) -> str:
    """The text, if the model can attribute its whole output onto it: within its vocabulary and at most
    MAX_ATTRIBUTED_SOURCE tokens (each output token costs n_steps runs of the whole model)."""
    text = gateway.check_vocabulary(model.loaded, gateway.check_text(model.loaded, text))
    n_tokens = len(model.loaded.tokenizer.encode(text))
    if n_tokens > MAX_ATTRIBUTED_SOURCE:
        raise InputError(f"attribution takes at most {MAX_ATTRIBUTED_SOURCE} source tokens; this text has {n_tokens}")
    return text


def attends(model: PageModel) -> bool:
    return source_attention_stack(model.loaded.model, model.loaded.family.token_axes) is not None


def partner(gateway: ModelGateway, model: PageModel) -> str:
    """The model shown beside `model` at first: one trained on the same task (translation: none named) that
    focuses the other way (attends where it does not), else the first other; "" where there is none. Models are
    loaded one at a time in the page's order until one focuses the other way, not all of them."""
    task = model.record.task
    others = (name for name in model.offered if name != model.name)
    same_task = [name for name in others if gateway.registry.entries[name].record.task == task]
    for name in same_task:
        if attends(page_model(gateway, FOCUS, name)) != attends(model):
            return name
    return same_task[0] if same_task else ""


def model_focus(gateway: ModelGateway, model: PageModel, text: str, n_steps: int) -> ModelFocus:
    text = attributable_text(gateway, model, text)
    outputs = min(gateway.limits.max_new_tokens, MAX_ATTRIBUTED_OUTPUTS)
    attribution = gateway.exclusive(lambda: source_attribution(model.loaded, text, outputs, n_steps))
    stack = source_attention_stack(model.loaded.model, model.loaded.family.token_axes)
    names = [EVERY_PATTERN] if stack else [LOGITS]
    trace = gateway.trace(model.loaded, text, NO_INTERVENTIONS, names, max_new_tokens=outputs)
    attention = layer_attention(trace, *stack) if stack else None
    return ModelFocus(
        model=model.name,
        output=trace.outputs[0],
        attribution=attribution,
        focus=focus(attribution, attention),
        attention_stack=f"{stack[0]} layer {stack[1]}" if stack else None,
    )


def focus_side_by_side(gateway: ModelGateway, models: list[PageModel], text: str, n_steps: int) -> list[ModelFocus]:
    """Each model's Focus on one text, in order; the text is checked for every model before any runs."""
    for model in models:
        attributable_text(gateway, model, text)
    return [model_focus(gateway, model, text, n_steps) for model in models]
