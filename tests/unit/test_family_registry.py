"""The family registry: a config names its family by the family's name (and its variant where the family has
several), an unknown family is named with the known ones, a name belongs to one family only, and a config of the
old format (a variant named as the family) reads through one migration."""

import pytest

from inference.core.family import (
    config_from_dict,
    current_config_values,
    families,
    family_names,
    family_of,
    register,
)
from inference.families.memory_transformer.model import VARIANTS


def test_every_shipped_family_is_registered_under_its_own_name():
    shipped = {"memory_transformer", "working_memory", "language_model", "recurrent_memory", "active_memory"}
    assert shipped <= set(family_names())  # plug-ins may add more
    assert all(family_of(family.name) is family for family in families())
    assert set(family_names()).isdisjoint(VARIANTS)  # a variant is not a family


def test_an_unknown_family_names_the_known_ones():
    known = ", ".join(sorted(family_names()))
    with pytest.raises(ValueError, match=f"unknown family 'hopfield'; known: {known}$"):
        family_of("hopfield")
    with pytest.raises(ValueError, match=f"unknown family 'hopfield'; known: {known}$"):
        config_from_dict({"family": "hopfield", "vocab_size": 40})
    with pytest.raises(ValueError, match="'memctrl' is a variant: family 'memory_transformer', variant 'memctrl'"):
        config_from_dict({"family": "memctrl", "vocab_size": 40})


class Impostor:
    """A family that claims a name another family has, or a variant that is another family's name."""

    title = "not a real family"
    token_axes = {}
    lesion_kinds = ()
    config_type = object

    def __init__(self, name: str, variants: tuple[str, ...] = ()):
        self.name = name
        self.variants = variants


def test_a_taken_name_cannot_be_registered_again():
    owner = family_of("memory_transformer")
    with pytest.raises(ValueError, match="family name 'memory_transformer' is registered by another family already"):
        register(Impostor("memory_transformer"))
    assert family_of("memory_transformer") is owner
    assert register(owner) is owner  # a family registering itself again changes nothing
    assert family_of("memory_transformer") is owner


def test_variants_are_declared_with_a_config_field_and_are_no_family_names():
    with pytest.raises(ValueError, match="a `variant` field exactly when it declares variants"):
        register(Impostor("impostor", ("big", "small")))  # its config (object) has no variant field
    assert "impostor" not in family_names()


def test_a_config_round_trips_through_its_family():
    from tests.conftest import tiny_config

    config = tiny_config("membottleneck", vocab_size=40)
    assert (config.family, config.variant) == ("memory_transformer", "membottleneck")
    assert config_from_dict(dict(vars(config))) == config
    with pytest.raises(TypeError, match="unknown_field"):
        config_from_dict({**vars(config), "unknown_field": 1})
    with pytest.raises(ValueError, match="unknown variant 'memgpu'; expected one of transformer, memtransformer"):
        config_from_dict({**vars(config), "variant": "memgpu"})


def test_a_format_1_config_reads_its_variant_from_family():
    old = {"family": "memctrl_shared", "vocab_size": 40, "memory_size": 4}
    assert current_config_values(old, 1) == {**old, "family": "memory_transformer", "variant": "memctrl_shared"}
    config = config_from_dict(current_config_values(old, 1))
    assert (config.family, config.variant, config.memory_size) == ("memory_transformer", "memctrl_shared", 4)
    same = {"family": "active_memory", "variant": "extended"}  # a family name was a family name already
    assert current_config_values(same, 1) == same
    assert current_config_values(old, 2) == old  # format 2 is read as it is (and refused: no such family)


class Undeclared:
    """A family that forgets what its token axes are, or gives a lesion kind of its own that breaks the contract."""

    name = "undeclared"
    title = "not a real family"
    variants = ()
    config_type = object
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
        assert "undeclared" not in family_names()


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
        assert "undeclared" not in family_names()
    assert lesion_kinds()["memory_size"] is MemorySize
