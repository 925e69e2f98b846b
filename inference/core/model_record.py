"""What a checkpoint records of the run that made it, typed: `ModelRecord`, the `meta` of its config.json.

Every writer builds one (a dict is read through the same model, so a bad key fails where it is written), every
reader reads its fields. A family may record fields of its own (`Family.record_fields`, a pydantic model): they
sit beside the shared fields in config.json and are read by the family's model into `family_fields`.

Versions: a record carries `version`; one without it (every checkpoint written before records had a version)
is version 0. An older record reads through one migration, `_current_values`. A record that does not read is a
CheckpointError naming the field, and the registry lists its folder broken with that reason.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, ValidationError


class ModelRecord(BaseModel):
    """How a model was made: its data, language, schedule, seed and what it is, in fields a page reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[2] = 2
    description: str | None = Field(None, max_length=2_000, description="the model in a line, for its card")
    task: str | None = Field(None, max_length=100, description="the algorithmic task it was trained on")
    example: str | None = Field(None, max_length=2_000, description="an input its pages open on")
    corpus: str | None = Field(None, max_length=100, description="the corpus it was trained on, by name")
    training_data: str | None = Field(None, max_length=2_000, description="its training data, in words")
    source_language: str | None = Field(None, max_length=100, description="the language it reads")
    memory_size: int | None = Field(None, ge=0, description="the memory size it was trained with")
    seed: int | None = Field(None, ge=0, description="its training seed")
    max_eval_pairs: int | None = Field(None, ge=1, description="the held-out pairs its run evaluated on")
    weights_dtype: Literal["float16"] | None = Field(None, description="float16: the weights were stored rounded")
    format: str | None = Field(None, max_length=100, description="a folder of another format: the reader's name")
    reconstructed: str | None = Field(None, max_length=2_000, description="how a lost config.json was rebuilt")
    family_fields: SerializeAsAny[BaseModel] | None = Field(
        None, description="fields the model's family records of its own (Family.record_fields)"
    )

    def family_items(self) -> list[tuple[str, str, str]]:
        """(name in words, value, description) of each field the family records of its own, for a model card."""
        if self.family_fields is None:
            return []
        fields = type(self.family_fields).model_fields
        return [
            (name.replace("_", " "), str(value), fields[name].description or "")
            for name, value in self.family_fields.model_dump(mode="json").items()
        ]

    def as_json(self) -> dict[str, Any]:
        """The record as config.json holds it: the shared fields set, the family's beside them."""
        shared = self.model_dump(exclude_none=True, exclude={"family_fields"})
        own = self.family_fields.model_dump(mode="json") if self.family_fields is not None else {}
        return {**shared, **own}


SHARED_FIELDS = frozenset(ModelRecord.model_fields) - {"family_fields"}


class RecordOwner(Protocol):
    """What reading a record needs of the model's family (inference.core.family.Family has it)."""

    @property
    def name(self) -> str: ...

    @property
    def variants(self) -> tuple[str, ...]: ...

    @property
    def record_fields(self) -> type[BaseModel] | None: ...


class RecordError(ValueError):
    """A record that does not read: the message names the field and what is wrong with it."""


def read_record(values: dict[str, Any] | ModelRecord, family: RecordOwner) -> ModelRecord:
    """The record of a checkpoint of `family` from its config.json `meta` (any version), or as a writer gave it;
    RecordError naming what does not read."""
    if isinstance(values, ModelRecord):
        return values
    if not isinstance(values, dict):
        raise RecordError(f"meta is a {type(values).__name__}, not an object")
    values = _current_values(values, family)
    own_model = family.record_fields
    own = {key: value for key, value in values.items() if key not in SHARED_FIELDS}
    if own and own_model is None:
        raise RecordError(f"meta has fields no {family.name} record has: {', '.join(sorted(own))}")
    try:
        family_fields = own_model.model_validate(own) if own_model is not None else None
        shared = {key: value for key, value in values.items() if key in SHARED_FIELDS}
        return ModelRecord.model_validate({**shared, "family_fields": family_fields})
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise RecordError(f"meta does not read: {problems}") from None


def _current_values(values: dict[str, Any], family: RecordOwner) -> dict[str, Any]:
    """An older record's values as version 2 holds them. Version 0 (no `version`) named the config's family again
    ("family": the family, or the variant its config now names); versions 0 and 1 named a segment model's memory
    in words ("variant"), which its config says (inference.core.segment_memory.segment_setup)."""
    version = values.get("version", 0)
    if version == 0:
        named = values.get("family")
        if named is not None and named != family.name and named not in family.variants:
            raise RecordError(f"meta names the family {named!r}, but the config is of {family.name}")
    if version in (0, 1):
        values = {key: value for key, value in values.items() if key not in ("family", "variant")} | {"version": 2}
    return values
