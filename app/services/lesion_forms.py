"""The lesion kinds a model takes as form controls, built from each kind's model (its fields, their bounds, their
descriptions), and the page's form read back into lesions through the same model: a kind the core or a family
registers is offered and parsed with no edit here, and the app keeps no list of kinds.

A kind's controls are a checkbox `lesion` whose value is the kind's name (ask for it) and one input per field,
named `<kind>.<field>`. A field's control is the one its schema names (`"control"`), else the one its type calls
for:
- a number within the field's bounds, a choice of its values, a list of whole numbers written with commas;
- `slider`: a range up to the model's config property named by `"upto"`, starting at the one named by `"start"`
  (the memory size: 0 to `max_memory_size`, starting at the trained `memory_size`);
- `slots`: a checkbox for each slot below the model's `"upto"` (the memory slots to knock out);
- `hook`: a choice of the model's hook points;
- `words`: a text whose words are read as the model's tokens, each alone (a forced memory);
- `input`: a text read as the model reads an input, checked against the server's text limit (a donor input).

A kind whose every field is left at its start (a slider at the trained size) asks for nothing. The form is read
in two steps: what it asks (`asked_lesions`, bounded where the request enters), then, once the model is known,
the lesions (`parse_lesion_forms`, with the model's forms and its readers of words and inputs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

from pydantic import ValidationError

from app.schemas.validation import MAX_FIELD_CHARS, InputError, shown, validation_message
from inference.core.bounds import MAX_LISTED
from inference.core.family import LoadedModel
from inference.core.hooks import hook_points
from inference.core.lesion_kinds import LesionKind, kind_name, lesion_kinds
from inference.core.tokenizer import TextTokenizer

MAX_LIST_CHARS = 12 * MAX_LISTED  # a list of numbers written out; a words field is far shorter

Control = Literal["integer", "number", "choice", "integers", "words", "text", "slider", "slots", "hook", "input"]
LIST_CONTROLS = ("integers", "slots")  # fields of several whole numbers (the slots' boxes send one value each)
Readers = Mapping[str, Callable[[str], Sequence[int]]]  # "words" and "input" -> the model's reading of the text


@dataclass(frozen=True)
class FieldControl:
    name: str  # the form field, "<kind>.<field>"
    label: str  # "from step"
    control: Control
    required: bool
    default: Any = None  # None: empty; where the field names a `start`, the model's value once resolved
    minimum: float | None = None
    maximum: float | None = None  # a slider's top and the highest slot, once resolved for a model
    above: bool = False  # the minimum itself is out of bounds (a strictly positive scale)
    choices: tuple[str, ...] = ()
    description: str = ""
    upto: str = ""  # the model's config property that bounds it (a slider's top, the number of slots)
    start: str = ""  # the model's config property it starts at; a field left there asks for nothing
    model_value: Any = None  # that property's value, once resolved for a model

    @property
    def bounds(self) -> str:
        """The field's bounds in words, e.g. "0 to 8192", "above 0, at most 1000", "at least 0"."""
        high = None if self.maximum is None else f"{self.maximum:g}"
        if self.minimum is None:
            return f"at most {high}" if high else ""
        if self.above:
            return f"above {self.minimum:g}" + (f", at most {high}" if high else "")
        return f"{self.minimum:g} to {high}" if high else f"at least {self.minimum:g}"

    @property
    def shown(self) -> str:
        """The default as its field shows it: "" for none, a list written with commas."""
        if self.default is None:
            return ""
        return ", ".join(map(str, self.default)) if isinstance(self.default, list | tuple) else str(self.default)

    @property
    def chosen(self) -> frozenset[str]:
        """The slots a slots field starts ticked (a page opened with a knock-out in its address)."""
        return frozenset(part.strip() for part in self.shown.split(",") if part.strip())

    @property
    def most_chars(self) -> int:
        return MAX_FIELD_CHARS if self.control == "input" else MAX_LIST_CHARS


@dataclass(frozen=True)
class LesionKindForm:
    kind: str
    title: str
    description: str  # the kind's docstring
    fields: tuple[FieldControl, ...]
    advanced: bool = False  # shown folded, after the others
    asked: bool = False  # its box starts ticked (a page opened with the lesion in its address)


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
    return LesionKindForm(name, kind.title, " ".join((kind.__doc__ or "").split()), fields, kind.advanced)


def _control(name: str, field: str, spec: dict[str, Any], required: bool) -> FieldControl:
    spec = next((s for s in spec.get("anyOf", ()) if s.get("type") != "null"), spec)  # an optional field's type
    common: dict[str, Any] = dict(
        name=name,
        label=field.replace("_", " "),
        required=required,
        default=spec.get("default"),
        description=spec.get("description", ""),
        upto=spec.get("upto", ""),
        start=spec.get("start", ""),
    )
    named = spec.get("control")
    if named in ("words", "input", "hook"):
        return FieldControl(control=named, **common)
    if named in ("slider", "slots"):
        items = spec.get("items", spec)
        return FieldControl(control=named, minimum=items.get("minimum"), **common)
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


@dataclass(frozen=True)
class AskedLesions:
    """The lesion kinds a form asks for (its checked `lesion` boxes) and the text of their fields."""

    kinds: tuple[str, ...] = ()
    values: tuple[tuple[str, str], ...] = ()  # ("<kind>.<field>", its text), for the kinds asked only


NO_LESIONS_ASKED = AskedLesions()


def lesion_forms_for(loaded: LoadedModel, preset: AskedLesions = NO_LESIONS_ASKED) -> list[LesionKindForm]:
    """The forms of every kind the model takes (`Family.applicable_lesions`), in the order they apply, each field
    bounded and started by the model where its schema says so (a hook field offers the model's hook points), and
    `preset`'s kinds ticked with their values filled in."""
    config, values = loaded.config, dict(preset.values)
    hooks = tuple(hook_points(loaded.model))
    forms = []
    for kind in loaded.family.applicable_lesions(config):
        form = lesion_form_of(kind)
        fields = []
        for field in form.fields:
            if field.upto:
                top = getattr(config, field.upto)
                field = replace(field, maximum=top - 1 if field.control == "slots" else top)
            if field.start:
                value = getattr(config, field.start)
                field = replace(field, default=value, model_value=value)
            if field.control == "hook":
                field = replace(field, choices=hooks)
            if field.name in values:
                field = replace(field, default=values[field.name])
            fields.append(field)
        forms.append(replace(form, fields=tuple(fields), asked=form.kind in preset.kinds))
    return forms


def asked_lesions(form: Mapping[str, Any], asked: Sequence[str]) -> AskedLesions:
    """What the form asks (a field's value is its text, or the list of its texts where the form sent several):
    the kinds named in `asked` and their fields' text; an unknown kind, or a field longer than any value of it
    can be, is an InputError naming it."""
    known = lesion_kinds()
    values = []
    for name in dict.fromkeys(asked):
        kind = known.get(name)
        if kind is None:
            raise InputError(f"unknown lesion kind {shown(name)}; the kinds are {', '.join(known)}")
        for control in lesion_form_of(kind).fields:
            text = _text(form.get(control.name, ""), control)
            if len(text) > control.most_chars:
                raise InputError(
                    f"{kind.title}: {control.label} is {len(text):,} characters; at most {control.most_chars:,}"
                )
            if text:
                values.append((control.name, text))
    return AskedLesions(tuple(dict.fromkeys(asked)), tuple(values))


def _text(value: Any, control: FieldControl) -> str:
    if not isinstance(value, list):
        return str(value).strip()
    if control.control in LIST_CONTROLS:
        return ",".join(str(part).strip() for part in value[: MAX_LISTED + 1])  # one over: refused
    return str(value[0]).strip() if value else ""


def parse_lesion_forms(asked: AskedLesions, forms: Sequence[LesionKindForm], readers: Readers) -> list[LesionKind]:
    """The lesions `asked`, each validated by its kind's model, words and inputs read as token ids by `readers`
    (the model's); a kind the model does not take (not among its `forms`), or a value out of bounds, is an
    InputError naming it. A kind whose every field is at the model's start asks for nothing."""
    known, texts = lesion_kinds(), dict(asked.values)
    offered = {form.kind: form for form in forms}
    lesions = []
    for name in asked.kinds:
        form = offered.get(name)
        if form is None:
            raise InputError(f"{name} does not apply to this model; it takes {', '.join(offered) or 'none'}")
        values = {
            control.name.partition(".")[2]: _value(texts[control.name], control, readers)
            for control in form.fields
            if control.name in texts
        }
        try:
            lesion = known[name].model_validate(values)
        except ValidationError as error:
            raise InputError(f"{form.title}: {validation_message(error)}") from None
        _check_model_bounds(lesion, form)
        if not _at_start(lesion, form):
            lesions.append(lesion)
    return lesions


def _check_model_bounds(lesion: LesionKind, form: LesionKindForm) -> None:
    """A field the model bounds (`upto`) within it, a hook one of its hook points: an InputError naming the model's
    bound otherwise."""
    for field in form.fields:
        value = getattr(lesion, field.name.partition(".")[2])
        if field.control == "hook" and value not in field.choices:
            raise InputError(
                f"{form.title}: {shown(value)} is not a hook point of this model; `memlens hooks MODEL` lists them"
            )
        top = max(value, default=0) if isinstance(value, tuple) else value
        if field.upto and field.maximum is not None and top > field.maximum:
            raise InputError(f"{form.title}: {field.label} {top} is out of range for this model ({field.bounds})")


def _at_start(lesion: LesionKind, form: LesionKindForm) -> bool:
    """Every field of the lesion has a start, and is at it (a memory size equal to the trained one)."""
    return (
        bool(form.fields)
        and all(field.start for field in form.fields)
        and all(getattr(lesion, field.name.partition(".")[2]) == field.model_value for field in form.fields)
    )


def words_to_ids(tokenizer: TextTokenizer, text: str) -> list[int]:
    """Words typed into a words field -> their token ids, in order, each word read alone (as it would start a
    text)."""
    return [i for word in text.split() for i in tokenizer.encode(word)]


def _value(text: str, control: FieldControl, readers: Readers) -> Any:
    if control.control == "words":
        return list(readers["words"](text))[: MAX_LISTED + 1]  # one over: refused
    if control.control == "input":
        return list(readers["input"](text))
    if control.control not in LIST_CONTROLS:
        return text  # the model reads numbers and choices from their text, strictly
    return [part.strip() for part in text.split(",") if part.strip()][: MAX_LISTED + 1]  # one over: refused
