"""How long the text in a page's box is against the limits its model's run applies, answered as the reader types
(characters, and tokens of the model's own tokenizer), so that nothing is cut or refused without warning."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request

from app.routers.deps import GatewayDep
from app.routers.rendering import render
from app.schemas.validation import FieldText, ModelName

router = APIRouter(include_in_schema=False)


@router.post("/text/length")
def text_length(
    request: Request, gateway: GatewayDep, model: Annotated[ModelName, Form()], text: Annotated[FieldText, Form()] = ""
):
    """The length line under a text box: "12 tokens of 256 (48 of 2,000 characters)", or what is over."""
    length = gateway.text_length(gateway.model(model), text)
    return render(request, "partials/text_length.html", length=length)
