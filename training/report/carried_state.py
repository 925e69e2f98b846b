"""docs/results.md's carried-state table (paper 002's language models): per
segment language model, enwiki validation perplexity as trained and with what
it carries between segments removed (RMT: memory reset at every segment;
Transformer-XL: no cache), the difference and its bootstrap interval, from
the "carried_state" records in the metrics.json of the runs in
checkpoints/segment_lm/<name>/ and of the served segment language models in
checkpoints/<name>/, each run once (training.studies.carried_state writes them). Every
figure printed comes from those records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from inference.analyses.carried_state import AS_TRAINED, WITHOUT
from inference.core.checkpoint import CARRIED_STATE_KEY
from training.evaluation.bootstrap import interval_text
from training.report.metrics_files import segment_lm_folders, trained_from

HEADING = "### Carried state: do the language models use what they carry? (paper 002)"
# The stream and the bootstrap: stated once in the description when every record shares them.
SHARED = (("text", "articles"), ("text", "stream_tokens"), ("text", "scored"), ("text", "context"),
          ("text", "stride"), ("difference", "level"), ("difference", "resamples"), ("difference", "seed"))  # fmt: skip


@dataclass
class CarriedRun:
    record: dict  # the run's carried-state record
    steps: int | None  # its training steps
    seed: int | None  # from the config it was trained from; None where its metrics record no training


def load_records(checkpoints: Path, configs: Path) -> list[CarriedRun]:
    """Every carried-state record in the metrics.json of checkpoints/segment_lm/* and checkpoints/* (each run once:
    metrics_files.segment_lm_folders), with its run's training steps and seed, Transformer-XL by cache, then RMT by
    memory (the runs table's order), then by run."""
    runs = []
    for path in (folder / "metrics.json" for folder in segment_lm_folders(Path(checkpoints))):
        metrics = json.loads(path.read_text()) if path.is_file() else {}
        if CARRIED_STATE_KEY not in metrics:
            continue
        train = metrics.get("train", {})
        seed = trained_from(path.parent, metrics, configs).train.seed if train else None
        runs.append(CarriedRun(metrics[CARRIED_STATE_KEY], train.get("steps"), seed))
    return sorted(runs, key=lambda run: (run.record["memory_size"] > 0, run.record["cache_length"],
                                         run.record["memory_size"], run.record["model"]))  # fmt: skip


def model_label(record: dict) -> str:
    carried = [f"RMT, memory {record['memory_size']}"] if record["memory_size"] else []
    carried += [f"Transformer-XL, cache {record['cache_length']}"] if record["cache_length"] else []
    return " + ".join(carried)


def removed_label(record: dict) -> str:
    removed = ["memory reset at every segment"] if record["memory_size"] else []
    removed += ["no cache"] if record["cache_length"] else []
    return "; ".join(removed)


def shared_values(records: list[dict]) -> dict[str, object] | None:
    """{field: value} of SHARED when every record has the same, else None."""
    values = {tuple(r[group][name] for group, name in SHARED) for r in records}
    return dict(zip((name for _, name in SHARED), values.pop())) if len(values) == 1 else None


def description(records: list[dict]) -> str:
    """The method in one paragraph, its figures from the records."""
    shared = shared_values(records)
    if shared is None:
        stream = "The first enwiki validation articles (the count and the stream's size per row)"
        windows = "the run's own windows"
        bootstrap = "a paired bootstrap over the articles (level, resamplings and seed in each record)"
    else:
        stream = (
            f"The first {shared['articles']:,} enwiki validation articles (a stream of "
            f"{shared['stream_tokens']:,} tokens, {shared['scored']:,} of them scored targets)"
        )
        windows = f"windows of {shared['context']} tokens advancing by {shared['stride']} (the runs' own windows)"
        bootstrap = (
            f"its {shared['level']:.0%} interval over {shared['resamples']:,} paired resamplings of the articles "
            f"(seed {shared['seed']})"
        )
    return (
        f"{stream} are scored in {windows}, once as trained and once with what the model carries from one segment "
        "to the next removed: RMT's memory reset to its initial value at every segment (the ResetMemory "
        "intervention), Transformer-XL's cache dropped (the same weights with no cache). Δ: perplexity without "
        f"minus as trained, above zero when the model uses what it carries, with {bootstrap}. "
        "Rerun, once the weights are retrained (`training/train_segment_lm.sh`): "
        "`python -m training carried-state checkpoints/segment_lm/<run>` (a served model: `checkpoints/<run>`)."
    )


def row(run: CarriedRun) -> str:
    record = run.record
    d, text, ppl = record["difference"], record["text"], record["perplexity"]
    steps, seed = ("-" if value is None else value for value in (run.steps, run.seed))
    return (
        f"| {record['model']} | {model_label(record)} | {removed_label(record)} | {steps} | {seed} | "
        f"{ppl[AS_TRAINED]:.1f} | "
        f"{ppl[WITHOUT]:.1f} | {interval_text(d['perplexity'], d['low'], d['high'])} | {text['scored']:,} | "
        f"{text['articles']:,} |"
    )


def carried_state_section(checkpoints: Path, configs: Path) -> list[str]:
    """The section's lines; configs: the training configs, for each run's seed."""
    runs = load_records(checkpoints, configs)
    records = [run.record for run in runs]
    parts = [HEADING, ""]
    if not records:
        return [*parts, "No carried-state measurements yet (`python -m training carried-state`).", ""]
    shared = shared_values(records)
    level = f"{shared['level']:.0%} CI" if shared else "CI"
    return [
        *parts,
        description(records),
        "",
        f"| run | model | carried state removed | training steps | seed | ppl as trained | ppl removed | Δ [{level}] "
        "| tokens scored | articles |",
        "|---" * 10 + "|",
        *(row(run) for run in runs),
        "",
    ]


def render_carried_state(checkpoints: Path, configs: Path) -> str:
    """The section as markdown text."""
    return "\n".join(carried_state_section(checkpoints, configs))
