"""The lesion-kind contract and its registry.

A lesion kind is a pydantic model tagged by its `kind` (a Literal of one name): its fields, with their bounds,
are its parameters, declared once, and the API, the pages' forms and the cache key all read them from the model.
It says itself in words for the note beside a lesioned result (`words`), and names its form (`title`).
A field's schema may name the control a form shows it with (`json_schema_extra={"control": ...}`, read by
app/services/lesion_forms.py) and the model's config property that bounds it (`"upto"`) or starts it (`"start"`).

The core registers the kinds every family shares (inference.core.interventions); a family registers its own
kinds by listing them in `Family.lesion_kinds`, from its folder. `Lesion` is the tagged union of every kind
registered: it dispatches on `kind` when it validates, and its JSON schema (the OpenAPI document) is built from
the kinds registered when it is asked for, so a kind a family adds is taken and described with no edit here.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Union

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler, TypeAdapter
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from inference.core.family_folders import load_families


class LesionKind(BaseModel):
    """One lesion kind (subclass it, give it `kind: Literal["name"] = "name"`, a docstring, a `title` and
    `words`, and register it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: ClassVar[str]  # the form's legend, e.g. "Reset the memory at a segment"
    advanced: ClassVar[bool] = False  # offered folded, under the page's other kinds (a kind for any hook point)

    @property
    def kind_name(self) -> str:
        return kind_name(type(self))

    def words(self, trained_memory: int) -> str:
        """The lesion in words a reader knows, e.g. "memory slots 2 and 5 knocked out" (`trained_memory`: the
        model's trained memory size, for kinds that compare with it)."""
        raise NotImplementedError

    def check_within(self, extent: Mapping[str, int]) -> None:
        """Refuse, with an InterventionError naming the bound, a lesion beyond the run it applies to, as a page
        measured that run (`extent`, e.g. a recurrent state's "last_step", "length" and "encoder_steps"); a kind
        whose fields the model alone bounds needs nothing here."""


def listed(numbers: tuple[int, ...] | list[int]) -> str:
    """1 -> "1"; 1, 2 -> "1 and 2"; 1, 2, 3 -> "1, 2 and 3"."""
    words = [str(n) for n in numbers]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def plural(count: int, noun: str) -> str:
    """1, "step" -> "1 step"; 3, "step" -> "3 steps"."""
    return f"{count} {noun}{'s' if count != 1 else ''}"


_KINDS: dict[str, type[LesionKind]] = {}  # kind name -> its model, in the order registered (the order hooks apply)


def kind_name(kind: type[LesionKind]) -> str:
    """The `kind` tag of a lesion kind's model; ValueError when it has none of one name."""
    field = kind.model_fields.get("kind")
    names = typing.get_args(field.annotation) if field is not None else ()
    if field is None or len(names) != 1 or field.default != names[0]:
        raise ValueError(f'lesion kind {kind.__name__} needs a field kind: Literal["name"] = "name"')
    return names[0]


def register_lesion_kind(kind: type[LesionKind]) -> type[LesionKind]:
    """Register a lesion kind that `check_lesion_kind` passes."""
    _KINDS[check_lesion_kind(kind)] = kind
    return kind


def check_lesion_kind(kind: type[LesionKind]) -> str:
    """The name of a kind that can be registered; one that is not a LesionKind, has no `kind` tag, title or words
    of its own, or whose name another kind holds, raises ValueError."""
    if not (isinstance(kind, type) and issubclass(kind, LesionKind)):
        raise ValueError(f"{kind!r} is not a LesionKind")
    name = kind_name(kind)
    if not isinstance(getattr(kind, "title", None), str) or kind.words is LesionKind.words:
        raise ValueError(f"lesion kind {name!r} needs a title and words of its own")
    taken = _KINDS.get(name)
    if taken is not None and taken is not kind:
        raise ValueError(f"lesion kind {name!r} is registered by {taken.__module__} already")
    return name


def lesion_kinds() -> dict[str, type[LesionKind]]:
    """Every registered kind by name, the families' included."""
    load_families()
    return dict(_KINDS)


def kind_order(name: str) -> int:
    """Where a kind's hooks apply among the kinds (the order registered)."""
    return list(_KINDS).index(name)


def _union() -> TypeAdapter:
    """The tagged union of the kinds registered now (built once for each set of kinds)."""
    kinds = tuple(lesion_kinds().values())
    if kinds not in _adapters:
        union: Any = Annotated[Union[kinds], Field(discriminator="kind")]  # noqa: UP007 (a union of a runtime tuple)
        _adapters[kinds] = TypeAdapter(union)
    return _adapters[kinds]


_adapters: dict[tuple[type[LesionKind], ...], TypeAdapter] = {}  # one union for each set of kinds seen


class _AnyRegisteredKind:
    """The schema of `Lesion`: a kind's model as it is, or its JSON form validated by the kind its tag names."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def validate(value: Any, _: Any) -> LesionKind:
            return value if isinstance(value, LesionKind) else _union().validate_python(value)

        return core_schema.no_info_wrap_validator_function(
            validate,
            core_schema.any_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda lesion, info: lesion.model_dump(mode=info.mode), info_arg=True
            ),
        )

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(_union().core_schema)


# Any registered kind, tagged by `kind`. Typed as the base class; at run time the annotation is Any, or FastAPI would
# list the base class, which no request holds, in the OpenAPI document.
if TYPE_CHECKING:
    Lesion = LesionKind
else:
    Lesion = Annotated[Any, _AnyRegisteredKind]
