"""A family's own lesion kinds as form controls, built from each kind's model (its fields, their bounds, their
descriptions), and the page's form read back into lesions through the same model: a kind a family registers is
offered and parsed with no edit here.

A kind's controls are a checkbox `lesion` whose value is the kind's name (ask for it) and one input per field,
named `<kind>.<field>`: a number within the field's bounds, a choice of its values, or a list of whole numbers
written with commas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import ValidationError

from app.schemas.validation import InputError, shown, validation_message
from inference.core.bounds import MAX_LISTED
from inference.core.lesion_kinds import LesionKind, kind_name, lesion_kinds

MAX_FIELD_CHARS = 12 * MAX_LISTED  # a list of numbers written out; any other field is far shorter

Control = Literal["integer", "number", "choice", "integers", "text"]


@dataclass(frozen=True)
class FieldControl:
    name: str  # the form field, "<kind>.<field>"
    label: str  # "from step"
    control: Control
    required: bool
    default: Any = None  # None: empty
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False  # the minimum itself is out of bounds (a strictly positive scale)
    choices: tuple[str, ...] = ()
    description: str = ""

    @property
    def bounds(self) -> str:
        """The field's bounds in words, e.g. "0 to 8192", "above 0, at most 1000", "at least 0"."""
        high = None if self.maximum is None else f"{self.maximum:g}"
        if self.minimum is None:
            return f"at most {high}" if high else ""
        if self.above:
            return f"above {self.minimum:g}" + (f", at most {high}" if high else "")
        return f"{self.minimum:g} to {high}" if high else f"at least {self.minimum:g}"


@dataclass(frozen=True)
class LesionKindForm:
    kind: str
    title: str
    description: str  # the kind's docstring
    fields: tuple[FieldControl, ...]


@cache
def lesion_form_of(kind: type[LesionKind]) -> LesionKindForm:
    """The controls of one kind, from its JSON schema (the bounds the API checks); built once a kind."""
    name = kind_name(kind)
    schema = kind.model_json_schema()
    required = set(schema.get("required", ()))
    fields = tuple(
        _control(f"{name}.{field}", field, spec, field in required)
        for field, spec in schema["properties"].items()
        if field != "kind"
    )
    return LesionKindForm(name, kind.title, " ".join((kind.__doc__ or "").split()), fields)


def _control(name: str, field: str, spec: dict[str, Any], required: bool) -> FieldControl:
    spec = next((s for s in spec.get("anyOf", ()) if s.get("type") != "null"), spec)  # an optional field's type
    common: dict[str, Any] = dict(
        name=name,
        label=field.replace("_", " "),
        required=required,
        default=spec.get("default"),
        description=spec.get("description", ""),
    )
    if "enum" in spec:
        return FieldControl(control="choice", choices=tuple(spec["enum"]), **common)
    if spec.get("type") == "array":
        items = spec.get("items", {})
        return FieldControl(control="integers", minimum=items.get("minimum"), maximum=items.get("maximum"), **common)
    if spec.get("type") in ("integer", "number"):
        above = "exclusiveMinimum" in spec
        return FieldControl(
            control=spec["type"],
            minimum=spec.get("exclusiveMinimum", spec.get("minimum")),
            maximum=spec.get("maximum"),
            above=above,
            **common,
        )
    return FieldControl(control="text", **common)


def family_lesion_forms(kinds: Sequence[type[LesionKind]]) -> list[LesionKindForm]:
    return [lesion_form_of(kind) for kind in kinds]


def parse_lesion_forms(form: Mapping[str, Any], asked: Sequence[str]) -> tuple[LesionKind, ...]:
    """The lesions of the kinds named in `asked` (the checked `lesion` boxes), each validated by its model from
    the form's `<kind>.<field>` values; an unknown kind or a value out of bounds is an InputError naming it."""
    known = lesion_kinds()
    lesions = []
    for name in dict.fromkeys(asked):
        kind = known.get(name)
        if kind is None:
            raise InputError(f"unknown lesion kind {shown(name)}; the kinds are {', '.join(known)}")
        values = {}
        for control in lesion_form_of(kind).fields:
            text = str(form.get(control.name, "")).strip()
            if len(text) > MAX_FIELD_CHARS:
                raise InputError(
                    f"{kind.title}: {control.label} is {len(text):,} characters; at most {MAX_FIELD_CHARS}"
                )
            if text:
                values[control.name.partition(".")[2]] = _value(text, control)
        try:
            lesions.append(kind.model_validate(values))
        except ValidationError as error:
            raise InputError(f"{kind.title}: {validation_message(error)}") from None
    return tuple(lesions)


def _value(text: str, control: FieldControl) -> Any:
    if control.control != "integers":
        return text  # the model reads numbers and choices from their text, strictly
    return [part.strip() for part in text.split(",") if part.strip()][: MAX_LISTED + 1]  # one over: refused
