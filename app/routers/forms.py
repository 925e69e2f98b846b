"""The form controls shared by the Explore and Compare pages, parsed into the inference core's models."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Depends, Form

from app.schemas.validation import FieldText, InputError, parse_number, shown
from inference.core.decoding import Decoding
from inference.core.interventions import MAX_LISTED, HeadRef, Interventions


def parse_heads(text: str) -> tuple[HeadRef, ...]:
    """'decoder.layers.1.cross_attn:3, encoder.layers.0.attn:5' -> head references (duplicates dropped)."""
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
        heads.append(HeadRef(attn=attn.strip(), head=parse_number(head, "head")))
    return tuple(dict.fromkeys(heads))


def lesion_form(
    memory_size: Annotated[int | None, Form(ge=0, le=MAX_LISTED)] = None,
    knockout: Annotated[list[int], Form(max_length=MAX_LISTED)] = [],  # noqa: B006 (each request gets a copy)
    block_reads: Annotated[str, Form(max_length=20)] = "none",
    ablate: Annotated[FieldText, Form()] = "",
) -> Interventions:
    """The lesion controls of the Explore form as interventions."""
    return Interventions.model_validate(
        {
            "memory_size": memory_size,
            "knockout_slots": tuple(knockout),
            "block_memory_reads": block_reads,
            "ablate_heads": parse_heads(ablate),
        }
    )


LesionDep = Annotated[Interventions, Depends(lesion_form)]


def decoding_form(
    decoding: Annotated[Literal["greedy", "beam"], Form()] = "greedy",
    beam_size: Annotated[int, Form(ge=1, le=8)] = 4,
    length_penalty: Annotated[float, Form(ge=0, le=2, allow_inf_nan=False)] = 0.6,
) -> Decoding:
    """The decoding controls of the Explore and Compare forms."""
    return Decoding(method=decoding, beam_size=beam_size, length_penalty=length_penalty)


DecodingDep = Annotated[Decoding, Depends(decoding_form)]
