"""What a checkpoint measured of its model, typed: `ModelResults`, its metrics.json.

Every key a run writes there is a field here, with its type, so a key misspelt or of the wrong shape fails where it
is written (`save_checkpoint`, `store_study`, `write_metrics` check the object before they write it) and where it is
read (a folder whose metrics.json does not read is listed broken, saying which field). Every reader of a loaded
model's results reads fields, never keys; the results report (training/report), which summarises the files
themselves, still reads them as JSON. The scores
of a translator or a language model are by split (`Scores`); the studies of the current weights measured offline
after training (`carried_state`, `memory_probe`) keep the shape their study module reads; a training run's own
bookkeeping (its schedule, curves, the task run's settings) is kept as the run wrote it.

Versions: a results file carries `version` (`write_metrics` writes it); one without it (every file written before
results had a version) is version 1, and reads through one migration (`current_values`): a segment task run's
`variant`, the description of what it carries between segments, is its `memory_setup` now, as in its config.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Scores = dict[str, float]  # split -> score, e.g. {"val": 27.1, "test_2016_flickr": 26.4}


class LesionCurve(BaseModel):
    """BLEU, chrF and the length ratio at each memory size (the lesion sweep of a translator with memory), on one
    split."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_size: list[int]
    bleu: list[float]
    chrf: list[float] | None = Field(None, description="chrF at each size; older files have BLEU only")
    length_ratio: list[float] | None = Field(None, description="output / reference length at each size")
    split: str | None = Field(None, description="the split swept; older files name none (the test split)")
    masked_bleu: float | None = Field(None, description="a working memory's BLEU with its memory masked")


class ModelResults(BaseModel):
    """The numbers a checkpoint's run measured (metrics.json), field by field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[2] = 2
    # translators and language models
    bleu: Scores | None = None
    chrf: Scores | None = None
    perplexity: Scores | None = None
    word_perplexity: Scores | None = None
    perplexity_counts: dict[str, Any] | None = Field(None, description="the scoring window and the texts scored")
    lesion: LesionCurve | None = None
    train: dict[str, Any] | None = Field(None, description="the training run: epochs, steps, schedule, curves")
    # studies of the current weights, measured offline (training.studies)
    carried_state: dict[str, Any] | None = Field(None, description="perplexity without the carried state")
    memory_probe: dict[str, Any] | None = Field(None, description="what each memory slot holds, by a linear probe")
    # task models (training/loop/segment_task_run.py, neural_gpu_task_run.py)
    task: str | None = None
    model: str | None = None
    memory_setup: str | None = Field(None, description="what a segment model carries, e.g. 'RMT, 8 memory tokens'")
    seed: int | None = None
    steps: int | None = None
    best_step: int | None = None
    memory: int | None = None
    segments: int | None = None
    carry: str | None = None
    source: str | None = None
    test: dict[str, Any] | list[dict[str, Any]] | None = Field(None, description="test accuracies")
    test_samples: int | None = None
    validation_char_accuracy: float | None = None
    validation_sequence_accuracy: float | None = None
    train_seconds: float | None = None
    test_seconds: float | None = None
    threads: int | None = None
    weights_dtype: str | None = None
    curve: list[list[int | float]] | None = Field(None, description="(step, loss, validation accuracy) along training")
    curriculum: list[Any] | None = None
    training: dict[str, Any] | None = Field(None, description="the task run's settings")
    final_pull: float | None = None
    sets_apart: float | None = None


NO_RESULTS = ModelResults()
Value = TypeVar("Value")


def needed(value: Value | None, what: str) -> Value:
    """A field a reader cannot do without, e.g. needed(results.perplexity, "perplexity"); ValueError naming it
    where the run did not measure it."""
    if value is None:
        raise ValueError(f"the checkpoint's metrics.json has no {what}")
    return value


class ResultsError(ValueError):
    """A metrics.json that does not read: the field and what is wrong with it."""


def current_values(values: dict[str, Any]) -> dict[str, Any]:
    """A metrics.json object of any version as the current version's values, its keys in their order (the version
    first); a version this code does not know is left for the model to refuse."""
    version = values.get("version", 1)
    current = {key: value for key, value in values.items() if key != "version"}
    if version == 1 and "variant" in current:
        current["memory_setup"] = current.pop("variant")
    return {"version": 2 if version == 1 else version, **current}


def read_results(values: dict[str, Any]) -> ModelResults:
    """A metrics.json object of any version as results; ResultsError naming the first field that does not read."""
    try:
        return ModelResults.model_validate(current_values(values))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ResultsError(f"metrics.json: {where}: {first['msg']}") from None
