"""Paired comparisons of translation checkpoints from their stored test outputs
(training.evaluation.outputs): BLEU, chrF and the length ratio of a model under a
condition, and sacrebleu's paired bootstrap of one (model, condition) against
another on the same sentences, as the results tables print them.

The references are read from the data directory: the outputs are committed,
the corpora are not."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from inference.analyses.quality import Quality, corpus_quality, signatures
from inference.core.capabilities import FamilyConfig
from inference.core.checkpoint import read_config
from inference.core.model_record import ModelRecord
from inference.core.places import resolve_data_dir
from training.data.corpora import CORPORA
from training.evaluation.bootstrap import LEVEL, TRANSLATION_RESAMPLES, PairedDifference, paired_translation_differences
from training.evaluation.outputs import AS_TRAINED, read_outputs

BOOTSTRAP_SEED = 0
Run = tuple[str, str]  # (checkpoint folder name, condition of training.evaluation.outputs)


class Comparisons:
    """The stored outputs of the checkpoints under `checkpoints`, scored against their references."""

    def __init__(self, checkpoints: Path, data_dir: str | Path | None = None):
        self.checkpoints = checkpoints
        self.data_dir = data_dir

    @cache  # noqa: B019 (one instance per results run: the cache lives as long as the tables it serves)
    def _record(self, model: str) -> dict | None:
        return read_outputs(self.checkpoints / model)

    def _stored(self, model: str) -> dict:
        """The model's stored outputs record; ValueError where it has none."""
        record = self._record(model)
        if record is None:
            raise ValueError(f"{model} has no stored test outputs")
        return record

    @cache  # noqa: B019
    def _config(self, model: str) -> tuple[FamilyConfig, ModelRecord]:
        """(model config, run record) of a checkpoint in any format the registry reads (a Hugging Face folder too)."""
        config, record, _ = read_config(self.checkpoints / model)
        return config, record

    @cache  # noqa: B019
    def _references(self, model: str) -> list[str]:
        record = self._stored(model)
        corpus = CORPORA[self._config(model)[1].corpus or "multi30k"]
        pairs = corpus.read(resolve_data_dir(self.data_dir))[record["split"]]
        return [reference for _, reference in pairs[: record["sentences"]]]

    @cache  # noqa: B019
    def _metrics(self, model: str) -> dict:
        path = self.checkpoints / model / "metrics.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def epochs(self, model: str) -> int | None:
        """The epochs the model was trained for, from its metrics (None: not recorded)."""
        return self._metrics(model).get("train", {}).get("epochs")

    def seed(self, model: str) -> int | None:
        """The seed the model was trained with (its record's seed; None: not recorded)."""
        return self._config(model)[1].seed

    def memory_size(self, model: str) -> int:
        """The memory size the model was trained with."""
        return self._config(model)[0].memory_size

    def has(self, model: str, condition: str = AS_TRAINED) -> bool:
        record = self._record(model)
        return record is not None and condition in record["outputs"]

    def conditions(self, model: str) -> list[str]:
        record = self._record(model)
        return list(record["outputs"]) if record else []

    def outputs(self, run: Run) -> list[str]:
        model, condition = run
        return self._stored(model)["outputs"][condition]

    def quality(self, run: Run) -> Quality | None:
        return corpus_quality(self.outputs(run), self._references(run[0])) if self.has(*run) else None

    def stored_quality(self, run: Run) -> Quality:
        """The quality of a run whose outputs are stored; ValueError where they are not."""
        quality = self.quality(run)
        if quality is None:
            raise ValueError(f"{run[0]} has no stored outputs {run[1]!r}")
        return quality

    def difference(self, a: Run, b: Run) -> dict[str, PairedDifference] | None:
        """a minus b, BLEU and chrF, on the same sentences; None unless both are stored on the same split."""
        if not (self.has(*a) and self.has(*b)) or self._stored(a[0])["split"] != self._stored(b[0])["split"]:
            return None
        references = self._references(a[0])
        return paired_translation_differences(self.outputs(a), self.outputs(b), references, BOOTSTRAP_SEED)


def difference_cell(difference: PairedDifference | None) -> str:
    return "-" if difference is None else difference.text()


def quality_cells(quality: Quality | None) -> str:
    """'BLEU | chrF | length ratio' cells."""
    if quality is None:
        return "- | - | -"
    return f"{quality.bleu:.2f} | {quality.chrf:.2f} | {quality.length_ratio:.3f}"


def method_note() -> list[str]:
    """What every comparison table states under it: the metrics' signatures and the bootstrap."""
    names = signatures()
    return [
        "",
        f"Differences: sacrebleu's paired bootstrap, {TRANSLATION_RESAMPLES} resamples of the test sentences "
        f"(seed {BOOTSTRAP_SEED}), the {LEVEL:.0%} interval of the difference and sacrebleu's p-value; "
        "a difference is stated only where the interval excludes zero (the p-value alone is not read: sacrebleu "
        "gives two identical outputs p = 0.001). "
        f"Signatures: BLEU `{names['bleu']}`; chrF `{names['chrf']}`.",
    ]
