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
