"""Paper 001's tables in docs/results.md.

- Algorithmic tasks: whole-sequence and per-bit accuracy by test length for
  the Neural GPU and the GRU + attention baseline: the served runs
  (checkpoints/<model>_<task>/metrics.json) and the collection of the others
  (checkpoints/algorithmic/<run>/metrics.json).
- Translation (Multi30k de-en, test_2016_flickr): teacher-forced perplexity,
  BLEU, chrF and the length ratio of every model beside the paper's Table 1,
  the paired bootstrap interval of the Extended Neural GPU's BLEU minus the
  attention baseline's at equal training, and BLEU by source length (the
  paper's Figure 6). `measure_translation` translates the test split with each
  model and stores the figures in checkpoints/active_memory_translation/comparison.json;
  `active_memory_section` renders them.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import sacrebleu

from inference.core.checkpoint import load_checkpoint
from inference.core.places import resolve_data_dir
from inference.runs.translate import translate_all
from training.data.translation import read_multi30k
from training.evaluation.bootstrap import LEVEL, TRANSLATION_RESAMPLES, PairedDifference, paired_translation_differences
from training.loop.config import load_config

TEST_SPLIT = "test_2016_flickr"
COMPARISON = Path("active_memory_translation") / "comparison.json"
BOOTSTRAP_SEED = 0
# Source length in words: (label, shortest, longest).
BUCKETS = (("1-9", 1, 9), ("10-12", 10, 12), ("13-15", 13, 15), ("16-19", 16, 19), ("20+", 20, 10**6))
# Paper 001, Table 1 (WMT'14 En-Fr): per-word perplexity and BLEU.
PAPER_TABLE_1 = {
    "neural_gpu": ("30.1", "< 5"),
    "markovian": ("11.8", "< 5"),
    "extended": ("3.3", "29.6"),
    "gru_attention": ("3.4", "26.4"),
}
# The models compared: (label, checkpoint folder under checkpoints/, paper row).
TRANSLATION_MODELS = (
    ("Neural GPU, 1 epoch", "active_memory_translation/neural_gpu_de_en", "neural_gpu"),
    ("Markovian Neural GPU, 1 epoch", "active_memory_translation/markovian_neural_gpu_de_en", "markovian"),
    ("Extended Neural GPU, 1 epoch", "active_memory_translation/extended_neural_gpu_de_en_1epoch", "extended"),
    ("GRU + attention, 1 epoch", "active_memory_translation/gru_attention_de_en_1epoch", "gru_attention"),
    ("Extended Neural GPU, 2 epochs", "extended_neural_gpu_de_en", "extended"),
    ("GRU + attention, 2 epochs", "gru_attention_de_en", "gru_attention"),
)
PAIRS = (  # (a, b): the Extended Neural GPU against the attention baseline at equal training
    ("Extended Neural GPU, 1 epoch", "GRU + attention, 1 epoch"),
    ("Extended Neural GPU, 2 epochs", "GRU + attention, 2 epochs"),
)


def bucket_of(source: str) -> str:
    words = len(source.split())
    return next(label for label, low, high in BUCKETS if low <= words <= high)


def quality(hypotheses: list[str], references: list[str]) -> dict:
    bleu = sacrebleu.corpus_bleu(hypotheses, [references])
    return {
        "bleu": bleu.score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
        "length_ratio": bleu.sys_len / bleu.ref_len,
        "sentences": len(references),
    }


def measure_translation(checkpoints: Path, configs: Path, data_dir: str | Path | None = None, log=print) -> dict:
    """Translate the test split with every model of TRANSLATION_MODELS whose weights are here; store and
    return the comparison (the models missing are listed as such)."""
    pairs = read_multi30k(resolve_data_dir(data_dir), TEST_SPLIT)
    sources, references = [s for s, _ in pairs], [r for _, r in pairs]
    buckets = [bucket_of(s) for s in sources]
    bucket_rows = {name: [i for i, b in enumerate(buckets) if b == name] for name, _, _ in BUCKETS}
    translations, rows = {}, {}
    for label, folder, paper in TRANSLATION_MODELS:
        path = checkpoints / folder
        if not (path / "model.safetensors").exists():
            log(f"{label}: no weights at {path}; left out")
            continue
        loaded = load_checkpoint(path, "cpu")
        hypotheses = translate_all(loaded.model, loaded.tokenizer, sources)
        translations[label] = hypotheses
        by_bucket = {
            name: quality([hypotheses[i] for i in rows], [references[i] for i in rows]) if rows else None
            for name, rows in bucket_rows.items()
        }
        train = loaded.metrics.get("train", {})
        rows[label] = {
            "folder": folder,
            "paper": paper,
            "description": loaded.meta.get("description", ""),
            "perplexity": loaded.metrics["perplexity"][TEST_SPLIT],
            "validation_bleu": loaded.metrics["bleu"]["val"],
            **quality(hypotheses, references),
            "by_source_length": by_bucket,
            "epochs": train.get("epochs"),
            "steps": train.get("steps"),
            "seconds": train.get("seconds"),
            "seed": load_config(configs / f"{path.name}.json").train.seed,
        }
        log(f"{label}: BLEU {rows[label]['bleu']:.2f}")
    differences = [
        {
            "a": a,
            "b": b,
            "overall": compared(translations[a], translations[b], references, list(range(len(references)))),
            "by_source_length": {
                name: compared(translations[a], translations[b], references, rows) for name, rows in bucket_rows.items()
            },
        }
        for a, b in PAIRS
        if a in translations and b in translations
    ]
    comparison = {
        "split": TEST_SPLIT,
        "bucket_sentences": {name: buckets.count(name) for name, _, _ in BUCKETS},
        "models": rows,
        "differences": differences,
        "bootstrap": {"resamples": TRANSLATION_RESAMPLES, "level": LEVEL, "seed": BOOTSTRAP_SEED},
    }
    out = checkpoints / COMPARISON
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(comparison, indent=2) + "\n")
    return comparison


ALGORITHMIC_COLLECTION = "algorithmic"  # the runs not served by the app: metrics and configs only


def compared(hypotheses_a: list[str], hypotheses_b: list[str], references: list[str], rows: list[int]) -> dict | None:
    """{"bleu": PairedDifference fields, "chrf": ..} of system a against system b on the sentences `rows`;
    None where there are none."""
    if not rows:
        return None
    pair = paired_translation_differences(
        [hypotheses_a[i] for i in rows], [hypotheses_b[i] for i in rows], [references[i] for i in rows], BOOTSTRAP_SEED
    )
    return {metric: asdict(difference) for metric, difference in pair.items()}


def algorithmic_runs(checkpoints: Path) -> list[dict]:
    """Every algorithmic run's metrics.json (training/loop/neural_gpu_task_run.py writes "curriculum"), served or not,
    by task, model, longest training length and steps."""
    paths = [*checkpoints.glob("*/metrics.json"), *(checkpoints / ALGORITHMIC_COLLECTION).glob("*/metrics.json")]
    runs = [run for run in (json.loads(path.read_text()) for path in paths) if "curriculum" in run]
    return sorted(runs, key=lambda r: (r["task"], r["model"], r["training"]["max_length"], r["steps"], r["seed"]))


def algorithmic_table(checkpoints: Path) -> list[str]:
    runs = algorithmic_runs(checkpoints)
    if not runs:
        return []
    factors = [row["factor"] for row in runs[0]["test"]]
    head = " | ".join(f"{factor}x" for factor in factors)
    lines = [
        "### Algorithmic tasks: accuracy by test length (paper 001)",
        "",
        f"Whole-sequence accuracy / per-bit accuracy of the greedy output, {runs[0]['test_samples']} test samples "
        "per length, at 1, 2, 5 and 10 times the longest training length. Per-bit accuracy counts a missing bit as "
        "wrong; on carry chains most output bits are 0, so a model that writes zeros scores high per bit there. "
        "Steps: trained (the step chosen on validation at the longest training length).",
        "",
        f"| task | model | seed | trained on length | steps (chosen) | curriculum reached | {head} | train s |",
        "|---|---|---|---|---|---|" + "---|" * len(factors) + "---|",
    ]
    for run in runs:
        cells = " | ".join(f"{row['sequence']:.2f} / {row['bit']:.2f}" for row in run["test"])
        reached = run["curriculum"][-1][1] if run["curriculum"] else run["training"]["start_length"]
        reached_at = f" (step {run['curriculum'][-1][0]})" if run["curriculum"] else ""
        lines.append(
            f"| {run['task']} | {run['model']} | {run['seed']} | {run['training']['max_length']} | "
            f"{run['steps']} ({run['best_step']}) | {reached}{reached_at} | {cells} | {run['train_seconds']:.0f} |"
        )
        if run["task"] == "addition":
            carry = " | ".join(f"{row['carry_sequence']:.2f} / {row['carry_bit']:.2f}" for row in run["test"])
            lines.append(f"| addition, carry chains | {run['model']} | {run['seed']} | | | | {carry} | |")
    return [*lines, ""]


def translation_tables(checkpoints: Path) -> list[str]:
    path = checkpoints / COMPARISON
    if not path.exists():
        return []
    comparison = json.loads(path.read_text())
    rows = comparison["models"]
    lines = [
        f"### Translation: Multi30k de-en, {comparison['split']} (paper 001, Table 1)",
        "",
        "Perplexity is per BPE token, teacher-forced on the reference (every target token and the EOS), "
        "without label smoothing; the paper's is per word on WMT'14 En-Fr. BLEU, chrF and the length ratio "
        "(output length / reference length) are sacrebleu's on greedy outputs.",
        "",
        "| model | test perplexity | BLEU | chrF | length ratio | val BLEU | seed | steps | train s "
        "| paper ppl / BLEU |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, row in rows.items():
        ppl, bleu = PAPER_TABLE_1[row["paper"]]
        lines.append(
            f"| {label} | {row['perplexity']:.2f} | {row['bleu']:.2f} | {row['chrf']:.2f} | {row['length_ratio']:.3f} "
            f"| {row['validation_bleu']:.2f} | {row['seed']} | {row['steps']} | {row['seconds']:.0f} | {ppl} / {bleu} |"
        )
    level = round(comparison["bootstrap"]["level"] * 100)
    lines += [
        "",
        "BLEU by source length in words (sentences per bucket: "
        + ", ".join(f"{k}: {v}" for k, v in comparison["bucket_sentences"].items())
        + f"); the last rows give the Extended Neural GPU's score minus the attention baseline's, BLEU then chrF, "
        f"with sacrebleu's paired bootstrap: the {level}% interval and the p-value "
        f"({comparison['bootstrap']['resamples']} resamples of the sentences, seed {comparison['bootstrap']['seed']}).",
        "",
        "| model | all | " + " | ".join(comparison["bucket_sentences"]) + " |",
        "|---|---|" + "---|" * len(comparison["bucket_sentences"]),
    ]
    for label, row in rows.items():
        cells = " | ".join(f"{b['bleu']:.2f}" if b else "-" for b in row["by_source_length"].values())
        lines.append(f"| {label} | {row['bleu']:.2f} | {cells} |")
    for difference in comparison["differences"]:
        for metric, title in (("bleu", "BLEU"), ("chrf", "chrF")):
            cells = " | ".join(_interval(v, metric) for v in difference["by_source_length"].values())
            lines.append(
                f"| {difference['a']} - {difference['b']}, {title} | {_interval(difference['overall'], metric)} "
                f"| {cells} |"
            )
    return [*lines, ""]


def _interval(value: dict | None, metric: str) -> str:
    if value is None:
        return "-"  # no sentence of that length
    return PairedDifference(**value[metric]).text()


def active_memory_section(checkpoints: Path) -> list[str]:
    return [*algorithmic_table(checkpoints), *translation_tables(checkpoints)]
