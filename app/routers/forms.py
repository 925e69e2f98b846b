"""Form controls shared by the pages, parsed into the inference core's models: the lesions a form asks for,
decoding, and the shortcuts that write scales of a hook point (the Explore page's head ablations, the FF page's
key edits)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Form, Request
from pydantic import ValidationError
from starlette.datastructures import ImmutableMultiDict

from app.schemas.validation import InputError, parse_decimal, parse_number, parse_numbers, shown
from app.services.lesion_forms import AskedLesions, asked_lesions
from inference.core.bounds import MAX_BEAM_SIZE, MAX_FACTOR, MAX_INDEX, MAX_LENGTH_PENALTY, MAX_LISTED
from inference.core.decoding import Decoding
from inference.core.interventions import Scale, ablate_head, scale_ff_keys


def parse_heads(text: str) -> list[Scale]:
    """'decoder.layers.1.cross_attn:3, encoder.layers.0.attn:5' -> head ablations (duplicates dropped)."""
    items = [part.strip() for part in text.split(",") if part.strip()]
    if len(items) > MAX_LISTED:
        raise InputError(f"{len(items):,} heads given; at most {MAX_LISTED:,}")
    heads = []
    for item in items:
        attn, _, head = item.rpartition(":")
        if not attn:
            raise InputError(
                f"cannot read head {shown(item)}: write attention-module:head, e.g. decoder.layers.1.cross_attn:3"
            )
        number = parse_number(head, "head")
        try:
            heads.append(ablate_head(attn.strip(), number))
        except ValidationError:  # a module name no hook point can have
            raise InputError(
                f"cannot read head {shown(item)}: an attention module's name is letters, digits, '_' and '.', "
                "e.g. decoder.layers.1.cross_attn:3"
            ) from None
    return list(dict.fromkeys(heads))


def asked_in(params: ImmutableMultiDict) -> AskedLesions:
    """The lesions a form or an address asks for (app/services/lesion_forms.py: its `lesion` boxes and their
    `<kind>.<field>` fields), read into lesions by `PageModel.lesion`, which knows the model."""
    asked = params.getlist("lesion")
    if len(asked) > MAX_LISTED:
        raise InputError(f"{len(asked):,} lesion kinds asked for; at most {MAX_LISTED:,}")
    return asked_lesions({key: params.getlist(key) for key in params.keys()}, [str(name) for name in asked])


async def asked_in_form(request: Request) -> AskedLesions:
    return asked_in(await request.form())


def asked_in_address(request: Request) -> AskedLesions:
    return asked_in(request.query_params)


LesionsDep = Annotated[AskedLesions, Depends(asked_in_form)]
PresetLesionsDep = Annotated[AskedLesions, Depends(asked_in_address)]  # a page opened with lesions set


def decoding_form(
    decoding: Annotated[Literal["greedy", "beam"], Form()] = "greedy",
    beam_size: Annotated[int, Form(ge=1, le=MAX_BEAM_SIZE)] = 4,
    length_penalty: Annotated[float, Form(ge=0, le=MAX_LENGTH_PENALTY, allow_inf_nan=False)] = 0.6,
) -> Decoding:
    """The decoding controls of the Explore and Compare forms."""
    return Decoding(method=decoding, beam_size=beam_size, length_penalty=length_penalty)


DecodingDep = Annotated[Decoding, Depends(decoding_form)]


EDIT_SYNTAX = "ff-layer:key,key [x scale], edits separated by ';' (e.g. layers.3.ff:12,40 x0; layers.5.ff:7 x10)"


def parse_key_edits(text: str, layers: list[str]) -> list[Scale]:
    """'layers.3.ff:12,40 x0; layers.5.ff:7 x10' -> scales of FF keys of the model's FF `layers`; without
    "x scale" an edit zeroes its keys. Bounded as Scale bounds the API's edits."""
    items = [part.strip() for part in text.replace("\n", ";").split(";") if part.strip()]
    if len(items) > MAX_LISTED:
        raise InputError(f"{len(items):,} edits given; at most {MAX_LISTED:,}")
    edits = []
    for item in items:
        body, _, scale = item.partition(" x")
        layer, _, keys = body.rpartition(":")
        try:
            factor = parse_decimal(scale, "scale") if scale.strip() else 0.0
            numbers = parse_numbers(keys, "key", MAX_LISTED)
        except ValueError:
            numbers, factor = (), None
        if not layer.strip() or not numbers or factor is None or abs(factor) > MAX_FACTOR:
            raise InputError(
                f"cannot read {shown(item)}: write {EDIT_SYNTAX}, with a scale within ±{MAX_FACTOR:g} in ASCII digits"
            )
        if layer.strip() not in layers:
            raise InputError(f"unknown feed-forward module {shown(layer.strip())}; this model has {', '.join(layers)}")
        if max(numbers) > MAX_INDEX:  # the layer's own width is checked when the edit is applied
            raise InputError(f"key {max(numbers)} is out of range: a key index is at most {MAX_INDEX:,}")
        edits.append(scale_ff_keys(layer.strip(), numbers, factor))
    return edits
