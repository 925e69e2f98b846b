"""Translation runs as the API and the Compare page give them: one model's translation with its tokens and
roles, its block mass, and several models on one sentence."""

from __future__ import annotations

from dataclasses import dataclass

from app.schemas.validation import InputError
from app.services.gateway import ModelGateway
from app.services.gating import PageModel
from inference.analyses.blocks import HeadBlocks, attention_blocks
from inference.core.decoding import GREEDY, Decoding
from inference.core.hook_names import EVERY_PATTERN, LOGITS
from inference.core.interventions import NO_INTERVENTIONS, Interventions
from inference.core.trace import Trace


@dataclass
class Translation:
    model: str
    source: str
    translation: str
    tokens: dict[str, list[str]]  # axis -> display tokens
    roles: dict[str, list[str]]  # axis -> roles
    memory_size: int
    interventions: list[dict]  # the normalised interventions, as the API takes them
    decoding: dict | None  # how the output was chosen (Decoding); None where it was given


def translate(
    gateway: ModelGateway, model: PageModel, text: str, interventions: Interventions, decoding: Decoding = GREEDY
) -> Translation:
    return translation_of(gateway.trace(model.loaded, text, interventions, [LOGITS], decoding=decoding))


def translation_of(trace: Trace) -> Translation:
    return Translation(
        model=trace.run.model,
        source=trace.sources[0],
        translation=trace.outputs[0],
        tokens={str(axis): rows[0] for axis, rows in trace.tokens.items()},
        roles={str(axis): [str(role) for role in rows[0]] for axis, rows in trace.roles.items()},
        memory_size=trace.run.memory_size,
        interventions=trace.run.interventions.model_dump(),
        decoding=trace.run.decoding.model_dump() if trace.run.decoding else None,
    )


def blocks(
    gateway: ModelGateway, model: PageModel, text: str, interventions: Interventions, decoding: Decoding = GREEDY
) -> tuple[Trace, list[HeadBlocks]]:
    """The run with every attention pattern, and its block mass per layer and head."""
    trace = gateway.trace(model.loaded, text, interventions, [EVERY_PATTERN], decoding=decoding)
    return trace, attention_blocks(trace)


@dataclass(frozen=True)
class Compared:
    model: str
    trace: Trace
    blocks: list[HeadBlocks]


def compared_models(gateway: ModelGateway, models: list[PageModel], text: str) -> list[PageModel]:
    """The models to compare, each once in the order given, the text checked against each before any runs: at least
    two different models, each of which reads the text within the limits (else an InputError naming the model)."""
    unique = list({model.name: model for model in models}.values())
    if len(unique) < 2:
        raise InputError("choose at least two different models to compare")
    for model in unique:
        try:
            gateway.check_text(model.loaded, text)
        except InputError as error:
            raise InputError(f"{model.name}: {error}") from None
    return unique


def compare_one(gateway: ModelGateway, model: PageModel, text: str, decoding: Decoding) -> Compared:
    """One model's column of a comparison: its unlesioned run and its block mass."""
    return Compared(model.name, *blocks(gateway, model, text, NO_INTERVENTIONS, decoding))


def compare(gateway: ModelGateway, models: list[PageModel], text: str, decoding: Decoding) -> list[Compared]:
    """Each model (once, in the order given) on one sentence, unlesioned; at least two different models."""
    return [compare_one(gateway, model, text, decoding) for model in compared_models(gateway, models, text)]
