"""The Focus page's and /api/focus's run: for each model, integrated
gradients of its output onto its source and, where it attends to its source,
its attention, as one Focus."""

from __future__ import annotations

from dataclasses import dataclass

from app.services.runner import Runner
from inference.analyses.attention import layer_attention
from inference.analyses.focus import Focus, focus, source_attention_stack
from inference.core.interventions import Interventions
from inference.runs.source_attribution import SourceAttribution


@dataclass(frozen=True)
class ModelFocus:
    model: str
    output: str
    attribution: SourceAttribution
    focus: Focus
    attention_stack: str | None  # the attention shown, e.g. "cross_attn layer 0"; None: the model does not attend


def model_focus(runner: Runner, model: str, text: str, n_steps: int) -> ModelFocus:
    attribution = runner.source_attribution(model, text, n_steps)
    stack = source_attention_stack(runner.model(model).model)
    names = ["*.pattern"] if stack else ["logits"]
    trace = runner.trace(model, text, Interventions(), names, max_new_tokens=runner.attributed_outputs)
    attention = layer_attention(trace, *stack) if stack else None
    return ModelFocus(
        model=model,
        output=trace.outputs[0],
        attribution=attribution,
        focus=focus(attribution, attention),
        attention_stack=f"{stack[0]} layer {stack[1]}" if stack else None,
    )
