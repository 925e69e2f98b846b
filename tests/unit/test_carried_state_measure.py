"""Reading a checkpoint's offline carried-state measurement (inference.analyses.carried_state): the figures as
recorded, the verdict from the interval alone, and nothing at all from a record that cannot be read whole."""

from __future__ import annotations

import json

import pytest

from inference.analyses.carried_state import carried_state_measure
from inference.core.checkpoint import store_study
from inference.core.model_results import ModelResults


def record(low: float, high: float) -> dict:
    return {
        "removed": "memory reset to its initial value at every segment",
        "text": {"split": "enwiki_val", "articles": 120, "scored": 41918},
        "perplexity": {"as_trained": 129.571, "without_carried_state": 132.674},
        "difference": {"perplexity": 3.103, "low": low, "high": high, "level": 0.95, "resamples": 2000, "seed": 0},
    }


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (2.327, 3.79, "the model uses what it carries"),
        (-0.28, 0.80, "no measurable difference: the interval includes zero"),
        (0.0, 0.5, "no measurable difference: the interval includes zero"),  # a bound on zero does not exclude it
        (-1.2, -0.1, "the model does better without what it carries"),
    ],
)
def test_the_verdict_follows_the_interval(low, high, verdict):
    measure = carried_state_measure(ModelResults(carried_state=record(low, high)))
    assert measure is not None and measure.verdict == verdict
    assert (measure.text, measure.articles, measure.tokens) == ("enwiki validation", 120, 41918)
    assert (measure.as_trained, measure.without) == (129.571, 132.674)
    assert (measure.low, measure.high, measure.level, measure.resamples, measure.seed) == (low, high, 0.95, 2000, 0)


def test_no_record_or_an_unreadable_one_gives_no_measure():
    assert carried_state_measure(ModelResults()) is None
    assert carried_state_measure(ModelResults(carried_state=None)) is None
    broken = record(1.0, 2.0)
    del broken["difference"]["low"]
    assert carried_state_measure(ModelResults(carried_state=broken)) is None
    broken = record(1.0, 2.0)
    broken["perplexity"]["as_trained"] = "n/a"
    assert carried_state_measure(ModelResults(carried_state=broken)) is None
    broken = record(1.0, 2.0)
    broken["text"]["articles"] = float("inf")  # json reads Infinity; int() of it overflows
    assert carried_state_measure(ModelResults(carried_state=broken)) is None


def test_a_study_is_stored_with_the_files_other_keys_kept(tmp_path):
    (tmp_path / "metrics.json").write_text('{"bleu": {"val": 30.5}, "memory_probe": {"old": 1}}\n')
    store_study(tmp_path, "carried_state", {"difference": {"perplexity": 3.1}})
    store_study(tmp_path, "memory_probe", {"new": 2})
    assert json.loads((tmp_path / "metrics.json").read_text()) == {
        "version": 2,  # written in the current version
        "bleu": {"val": 30.5},
        "memory_probe": {"new": 2},
        "carried_state": {"difference": {"perplexity": 3.1}},
    }
    with pytest.raises(ValueError, match="not a study key"):
        store_study(tmp_path, "bleu", {})
