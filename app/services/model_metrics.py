"""The Models table's metric columns: one per metric and test set, each
named for a reader ("BLEU Multi30k test 2016", "word perplexity WikiText-103
test"), so a language model's perplexity never sits under a BLEU header."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from inference.core.checkpoint import RegistryEntry
from inference.core.model_results import ModelResults, Scores

# a score of the results -> (header word, value format, the scores by split)
METRICS: dict[str, tuple[str, str, Callable[[ModelResults], Scores | None]]] = {
    "bleu": ("BLEU", "{:.2f}", lambda results: results.bleu),
    "word_perplexity": ("word perplexity", "{:.1f}", lambda results: results.word_perplexity),
}
TEST_SETS = {
    "test_2016_flickr": "Multi30k test 2016",
    "test_tatoeba": "Tatoeba test (ru-en)",
    "test_news": "WMT newstest2019 (ru-en)",
    "test_tico19": "TICO-19 test (ru-en)",
    "wikitext103_test": "WikiText-103 test",
    "wikitext2_test": "WikiText-2 test",
}


@dataclass(frozen=True)
class MetricColumn:
    metric: str  # a key of METRICS
    split: str  # a test split of that metric in metrics.json

    @property
    def header(self) -> str:
        return f"{METRICS[self.metric][0]} {TEST_SETS.get(self.split, self.split.replace('_', ' '))}"

    def cell(self, results: ModelResults) -> str:
        _, shown, scores = METRICS[self.metric]
        value = (scores(results) or {}).get(self.split)
        return shown.format(value) if value is not None else "-"


@dataclass(frozen=True)
class TaskAccuracyColumn:
    """A task model's test accuracy (papers 001 and 002): whole sequences right at the trained length
    (the length-generalisation record's factor 1), or next characters right (a segment task)."""

    header = "task accuracy, test"

    def cell(self, results: ModelResults) -> str:
        test = results.test
        if isinstance(test, list):
            trained = next((row for row in test if row.get("factor") == 1), None)
            return f"{trained['sequence']:.2f} of sequences" if trained else "-"
        if isinstance(test, dict) and isinstance(test.get("char_accuracy"), int | float):
            return f"{test['char_accuracy']:.2f} of characters"
        return "-"


def metric_columns(entries: list[RegistryEntry]) -> list[MetricColumn | TaskAccuracyColumn]:
    """Every (metric, test split) some model reports, validation splits left out: BLEU first,
    then in TEST_SETS order; then task accuracy where a task model is listed."""
    found = {
        MetricColumn(metric, split)
        for entry in entries
        for metric, (_, _, scores) in METRICS.items()
        for split in scores(entry.metrics) or {}
        if "test" in split
    }
    order = list(TEST_SETS)
    tasks = [TaskAccuracyColumn()] if any(entry.metrics.task is not None for entry in entries) else []
    return (
        sorted(
            found,
            key=lambda c: (
                list(METRICS).index(c.metric),
                order.index(c.split) if c.split in order else len(order),
                c.split,
            ),
        )
        + tasks
    )
