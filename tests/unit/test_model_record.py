"""The typed run record of a checkpoint: versions 0 (no version; every folder written before records had one) and 1
read through the migration, a key no record has or a value out of type is refused naming it, and a family's own fields
are read by the family's model."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel

from inference.core.family import family_of
from inference.core.model_record import ModelRecord, RecordError, read_record


class Owner:
    """A family as reading a record sees it."""

    name = "owner"
    variants = ("owner_variant",)

    def __init__(self, record_fields=None):
        self.record_fields = record_fields


class OwnFields(BaseModel):
    gate: Literal["open", "shut"] = "open"
    laps: int = 0


def test_versions_0_and_1_read_through_the_migration():
    memory_transformer = family_of("memory_transformer")
    version_0 = {"family": "memtransformer", "memory_size": 10, "corpus": "multi30k", "seed": 2}  # a variant's name
    record = read_record(version_0, memory_transformer)
    assert record == ModelRecord(memory_size=10, corpus="multi30k", seed=2)
    assert record.as_json() == {"version": 2, "memory_size": 10, "corpus": "multi30k", "seed": 2}  # "family" gone
    assert read_record(record.as_json(), memory_transformer) == record  # version 2 reads as it is
    assert read_record({**version_0, "family": "memory_transformer"}, memory_transformer) == record
    segments = {"version": 1, "variant": "RMT, 10 memory tokens; segments of 50 tokens", "seed": 1}
    assert read_record(segments, family_of("recurrent_memory")).as_json() == {"version": 2, "seed": 1}


def test_a_record_that_does_not_read_names_what_is_wrong():
    cases = (
        ({"family": "transformer"}, "meta names the family 'transformer', but the config is of owner"),
        ({"version": 2, "colour": "red"}, "meta has fields no owner record has: colour"),
        ({"version": 3}, "version: Input should be 2"),
        ({"seed": -1}, "seed: Input should be greater than or equal to 0"),
        ({"weights_dtype": "int8"}, "weights_dtype: Input should be 'float16'"),
        ({"task": ["copy"]}, "task: Input should be a valid string"),
    )
    for values, said in cases:
        with pytest.raises(RecordError, match=said):
            read_record(values, Owner())
    with pytest.raises(RecordError, match="meta is a list, not an object"):
        read_record([], Owner())


def test_a_family_reads_its_own_fields():
    record = read_record({"version": 2, "seed": 3, "gate": "shut"}, Owner(OwnFields))
    assert record.seed == 3 and record.family_fields == OwnFields(gate="shut")
    assert record.as_json() == {"version": 2, "seed": 3, "gate": "shut", "laps": 0}
    assert record.family_items() == [("gate", "shut", ""), ("laps", "0", "")]
    with pytest.raises(RecordError, match="gate: Input should be 'open' or 'shut'"):
        read_record({"gate": "ajar"}, Owner(OwnFields))
    with pytest.raises(RecordError, match="meta has fields no owner record has: gate"):
        read_record({"gate": "shut"}, Owner())
