"""What carrying state from segment to segment is worth to a segment language model, as measured offline
(`python -m training carried-state`: the "carried_state" record of the checkpoint's metrics.json, perplexity
on enwiki validation articles as trained and with the memory reset at every segment or the cache dropped).
The Segments page states it beside the live lesions; /api/models gives it as a field."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from inference.core.model_results import ModelResults

AS_TRAINED, WITHOUT = "as_trained", "without_carried_state"  # the record's two scorings
SPLIT = "enwiki_val"  # the text the study scores
SPLIT_WORDS = {SPLIT: "enwiki validation"}  # how the page names it


@dataclass(frozen=True)
class CarriedStateMeasure:
    removed: str  # what was taken away, in words (the record's own)
    text: str  # the text scored, in words
    articles: int  # its first articles scored
    tokens: int  # target tokens scored
    as_trained: float  # token perplexity
    without: float  # token perplexity with the carried state removed
    difference: float  # without minus as trained: above zero when the model uses what it carries
    low: float  # the interval of the difference
    high: float
    level: float  # of the interval, e.g. 0.95
    resamples: int  # paired bootstrap resamplings of the articles
    seed: int

    def fields(self) -> dict:
        """Its figures and verdict as JSON fields."""
        return {**asdict(self), "verdict": self.verdict}

    @property
    def verdict(self) -> str:
        """The difference in words: measurable only when its interval excludes zero."""
        if self.low > 0:
            return "the model uses what it carries"
        if self.high < 0:
            return "the model does better without what it carries"
        return "no measurable difference: the interval includes zero"


def carried_state_measure(results: ModelResults) -> CarriedStateMeasure | None:
    """The measure of a checkpoint's results; None where it was not measured or its record is unreadable
    (a hand-edited or older file), so that the page states only a figure it can read whole."""
    record = results.carried_state
    if record is None:
        return None
    try:
        difference, perplexity = record["difference"], record["perplexity"]
        return CarriedStateMeasure(
            removed=str(record["removed"]),
            text=SPLIT_WORDS.get(record["text"]["split"], str(record["text"]["split"])),
            articles=int(record["text"]["articles"]),
            tokens=int(record["text"]["scored"]),
            as_trained=float(perplexity[AS_TRAINED]),
            without=float(perplexity[WITHOUT]),
            difference=float(difference["perplexity"]),
            low=float(difference["low"]),
            high=float(difference["high"]),
            level=float(difference["level"]),
            resamples=int(difference["resamples"]),
            seed=int(difference["seed"]),
        )
    except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: int() of an infinity
        return None
