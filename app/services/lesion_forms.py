"""A family's own lesion kinds as form controls, built from each kind's model (its fields, their bounds, their
descriptions), and the page's form read back into lesions through the same model: a kind a family registers is
offered and parsed with no edit here.

A kind's controls are a checkbox `lesion` whose value is the kind's name (ask for it) and one input per field,
named `<kind>.<field>`: a number within the field's bounds, a choice of its values, a list of whole numbers
written with commas, or words (a field of token ids whose schema says `"control": "words"`), read as the model's
tokens. The form is read in two steps: what it asks (`asked_lesions`, bounded where the request enters), then,
once the model is known, the lesions (`parse_lesion_forms`, with the model's tokenizer for words)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import ValidationError

from app.schemas.validation import InputError, shown, validation_message
from inference.core.bounds import MAX_LISTED
from inference.core.lesion_kinds import LesionKind, kind_name, lesion_kinds
from inference.core.tokenizer import TextTokenizer

MAX_FIELD_CHARS = 12 * MAX_LISTED  # a list of numbers written out; any other field is far shorter

Control = Literal["integer", "number", "choice", "integers", "words", "text"]


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
    if spec.get("control") == "words":
        return FieldControl(control="words", **common)
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


@dataclass(frozen=True)
class AskedLesions:
    """The family lesion kinds a form asks for (its checked `lesion` boxes) and the text of their fields."""

    kinds: tuple[str, ...] = ()
    values: tuple[tuple[str, str], ...] = ()  # ("<kind>.<field>", its text), for the kinds asked only


NO_LESIONS_ASKED = AskedLesions()


def asked_lesions(form: Mapping[str, Any], asked: Sequence[str]) -> AskedLesions:
    """What the form asks: the kinds named in `asked` and their fields' text; an unknown kind, or a field longer
    than any value of it can be, is an InputError naming it."""
    known = lesion_kinds()
    values = []
    for name in dict.fromkeys(asked):
        kind = known.get(name)
        if kind is None:
            raise InputError(f"unknown lesion kind {shown(name)}; the kinds are {', '.join(known)}")
        for control in lesion_form_of(kind).fields:
            text = str(form.get(control.name, "")).strip()
            if len(text) > MAX_FIELD_CHARS:
                raise InputError(
                    f"{kind.title}: {control.label} is {len(text):,} characters; at most {MAX_FIELD_CHARS}"
                )
            if text:
                values.append((control.name, text))
    return AskedLesions(tuple(dict.fromkeys(asked)), tuple(values))


def parse_lesion_forms(asked: AskedLesions, encode: Callable[[str], Sequence[int]]) -> tuple[LesionKind, ...]:
    """The lesions `asked`, each validated by its kind's model, words read as token ids by `encode` (the model's
    tokenizer); a value out of bounds is an InputError naming it."""
    known, texts = lesion_kinds(), dict(asked.values)
    lesions = []
    for name in asked.kinds:
        kind = known[name]
        values = {
            control.name.partition(".")[2]: _value(texts[control.name], control, encode)
            for control in lesion_form_of(kind).fields
            if control.name in texts
        }
        try:
            lesions.append(kind.model_validate(values))
        except ValidationError as error:
            raise InputError(f"{kind.title}: {validation_message(error)}") from None
    return tuple(lesions)


def words_to_ids(tokenizer: TextTokenizer, text: str) -> list[int]:
    """Words typed into a words field -> their token ids, in order, each word read alone (as it would start a
    text)."""
    return [i for word in text.split() for i in tokenizer.encode(word)]


def _value(text: str, control: FieldControl, encode: Callable[[str], Sequence[int]]) -> Any:
    if control.control == "words":
        return list(encode(text))[: MAX_LISTED + 1]  # one over: refused
    if control.control != "integers":
        return text  # the model reads numbers and choices from their text, strictly
    return [part.strip() for part in text.split(",") if part.strip()][: MAX_LISTED + 1]  # one over: refused
