"""The family registry: every config's family is found, an unknown one is named
with the known ones, and a config name belongs to one family only."""

import pytest

from inference.core.family import config_from_dict, config_names, family_of, register
from inference.families.memory_transformer.model import FAMILIES


def test_every_shipped_family_is_registered():
    assert {*FAMILIES, "working_memory", "language_model"} <= set(config_names())  # plug-ins may add more
    assert {family_of(name).name for name in FAMILIES} == {"memory_transformer"}
    assert family_of("working_memory").name == "working_memory"
    assert family_of("language_model").name == "language_model"


def test_an_unknown_family_names_the_known_ones():
    known = ", ".join(sorted(config_names()))
    with pytest.raises(ValueError, match=f"unknown family 'hopfield'; known: {known}$"):
        family_of("hopfield")
    with pytest.raises(ValueError, match=f"unknown family 'hopfield'; known: {known}$"):
        config_from_dict({"family": "hopfield", "vocab_size": 40})


class Impostor:
    """A family that claims a config name another family owns."""

    name = "impostor"
    title = "not a real family"

    def __init__(self, config_names: tuple[str, ...]):
        self.config_names = config_names


def test_a_taken_config_name_cannot_be_registered_again():
    owner = family_of("memtransformer")
    for claimed in (("memtransformer",), ("impostor_config", "memtransformer")):
        with pytest.raises(ValueError, match="config family 'memtransformer' is registered by memory_transformer"):
            register(Impostor(claimed))
        assert family_of("memtransformer") is owner
        assert "impostor_config" not in config_names()  # a refused family registers none of its names
    assert register(owner) is owner  # a family registering itself again changes nothing
    assert family_of("memtransformer") is owner


def test_a_config_round_trips_through_its_family():
    from tests.conftest import tiny_config

    config = tiny_config("membottleneck", vocab_size=40)
    assert config_from_dict(dict(vars(config))) == config
    with pytest.raises(TypeError, match="unknown_field"):
        config_from_dict({**vars(config), "unknown_field": 1})


class Undeclared:
    """A family that forgets what its token axes are, or gives a lesion kind of its own that breaks the contract."""

    name = "undeclared"
    title = "not a real family"
    config_names = ("undeclared_config",)
    lesion_kinds = ()

    def __init__(self, token_axes, lesion_kinds=()):
        self.token_axes = token_axes
        self.lesion_kinds = lesion_kinds


def test_a_family_must_declare_a_role_for_every_token_axis():
    from inference.core.axes import AxisRole

    for axes, said in (
        ({}, "declares no token_axes"),
        ({"enc": "source"}, "token axis 'enc' needs a name and an AxisRole, not 'source'"),
        ({"two words": AxisRole.SOURCE}, "token axis 'two words' needs a name and an AxisRole"),
    ):
        with pytest.raises(ValueError, match=said):
            register(Undeclared(axes))
        assert "undeclared_config" not in config_names()


def test_a_lesion_kind_a_family_gives_must_meet_the_contract():
    from typing import ClassVar, Literal

    from inference.core.axes import AxisRole
    from inference.core.interventions import MemorySize
    from inference.core.lesion_kinds import LesionKind, lesion_kinds

    class Wordless(LesionKind):
        kind: Literal["wordless"] = "wordless"
        title: ClassVar[str] = "A kind without words"

    class Untagged(LesionKind):
        title: ClassVar[str] = "A kind without a tag"

        def words(self, trained_memory: int) -> str:
            return "untagged"

    class Impostor(MemorySize):  # the core's kind name, taken again
        pass

    for kind, said in (
        (Wordless, "needs a title and words of its own"),
        (Untagged, 'needs a field kind: Literal\\["name"\\] = "name"'),
        (Impostor, "lesion kind 'memory_size' is registered by inference.core.interventions already"),
        (dict, "is not a LesionKind"),
    ):
        with pytest.raises(ValueError, match=said):
            register(Undeclared({"tok": AxisRole.TEXT}, (kind,)))
        assert "undeclared_config" not in config_names()
    assert lesion_kinds()["memory_size"] is MemorySize
