"""Paper 001's translation comparison, measured: `measure_translation` translates Multi30k's test split
with each active-memory model and the attention baseline and stores teacher-forced perplexity, BLEU, chrF,
the length ratio, the paired bootstrap of each pair of PAIRS (the Extended Neural GPU against the baseline at
equal training; the baseline at 8 epochs against 2), and BLEU by source length (the paper's Figure 6) in
checkpoints/active_memory_translation/comparison.json, which training.report.active_memory renders."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from inference.analyses.quality import corpus_quality
from inference.core.checkpoint import load_checkpoint
from inference.core.model_results import needed
from inference.core.places import resolve_data_dir
from inference.runs.translate import translate_all
from training.data.translation import read_multi30k
from training.evaluation.bootstrap import LEVEL, TRANSLATION_RESAMPLES, paired_translation_differences
from training.loop.config import load_config

TEST_SPLIT = "test_2016_flickr"


COMPARISON = Path("active_memory_translation") / "comparison.json"


BOOTSTRAP_SEED = 0


# Source length in words: (label, shortest, longest).
BUCKETS = (("1-9", 1, 9), ("10-12", 10, 12), ("13-15", 13, 15), ("16-19", 16, 19), ("20+", 20, 10**6))


# The models compared: (label, checkpoint folder under checkpoints/, paper row).
TRANSLATION_MODELS = (
    ("Neural GPU, 1 epoch", "active_memory_translation/neural_gpu_de_en", "neural_gpu"),
    ("Markovian Neural GPU, 1 epoch", "active_memory_translation/markovian_neural_gpu_de_en", "markovian"),
    ("Extended Neural GPU, 1 epoch", "active_memory_translation/extended_neural_gpu_de_en_1epoch", "extended"),
    ("GRU + attention, 1 epoch", "active_memory_translation/gru_attention_de_en_1epoch", "gru_attention"),
    ("Extended Neural GPU, 2 epochs", "extended_neural_gpu_de_en", "extended"),
    ("GRU + attention, 2 epochs", "gru_attention_de_en", "gru_attention"),
    ("Extended Neural GPU, 8 epochs", "extended_neural_gpu_de_en_8epochs", "extended"),
    ("GRU + attention, 8 epochs", "gru_attention_de_en_8epochs", "gru_attention"),
)


PAIRS = (  # (a, b): a minus b; the Extended Neural GPU against the attention baseline at equal training, then
    # what 6 more epochs give each
    ("Extended Neural GPU, 1 epoch", "GRU + attention, 1 epoch"),
    ("Extended Neural GPU, 2 epochs", "GRU + attention, 2 epochs"),
    ("Extended Neural GPU, 8 epochs", "GRU + attention, 8 epochs"),
    ("Extended Neural GPU, 8 epochs", "Extended Neural GPU, 2 epochs"),
    ("GRU + attention, 8 epochs", "GRU + attention, 2 epochs"),
)


def bucket_of(source: str) -> str:
    words = len(source.split())
    return next(label for label, low, high in BUCKETS if low <= words <= high)


def measure_translation(checkpoints: Path, configs: Path, data_dir: str | Path | None = None, log=print) -> dict:
    """Translate the test split with every model of TRANSLATION_MODELS whose weights are here; store and
    return the comparison. A model without weights here keeps the row the stored comparison has for it (the
    1-epoch runs' weights are not committed), and a difference between two such models keeps its stored
    interval; the other models missing are listed as such."""
    pairs = read_multi30k(resolve_data_dir(data_dir), TEST_SPLIT)
    sources, references = [s for s, _ in pairs], [r for _, r in pairs]
    buckets = [bucket_of(s) for s in sources]
    bucket_rows = {name: [i for i, b in enumerate(buckets) if b == name] for name, _, _ in BUCKETS}
    stored = stored_comparison(checkpoints / COMPARISON)
    translations, rows = {}, {}
    for label, folder, paper in TRANSLATION_MODELS:
        path = checkpoints / folder
        if not (path / "model.safetensors").exists():
            if label in stored["models"]:
                rows[label] = stored["models"][label]
            log(f"{label}: no weights at {path}; " + ("its stored row kept" if label in rows else "left out"))
            continue
        loaded = load_checkpoint(path, "cpu")
        hypotheses = translate_all(loaded.model, loaded.tokenizer, sources)
        translations[label] = hypotheses
        by_bucket = {
            name: asdict(corpus_quality([hypotheses[i] for i in rows], [references[i] for i in rows])) if rows else None
            for name, rows in bucket_rows.items()
        }
        results = loaded.metrics
        train = results.train or {}
        rows[label] = {
            "folder": folder,
            "paper": paper,
            "description": loaded.record.description or "",
            "perplexity": needed(results.perplexity, "perplexity")[TEST_SPLIT],
            "validation_bleu": needed(results.bleu, "BLEU")["val"],
            **asdict(corpus_quality(hypotheses, references)),
            "by_source_length": by_bucket,
            "epochs": train.get("epochs"),
            "steps": train.get("steps"),
            "seconds": train.get("seconds"),
            "seed": load_config(configs / f"{path.name}.json").train.seed,
        }
        log(f"{label}: BLEU {rows[label]['bleu']:.2f}")
    stored_differences = {(d["a"], d["b"]): d for d in stored["differences"]}
    differences = []
    for a, b in PAIRS:
        if a in translations and b in translations:
            differences.append(
                {
                    "a": a,
                    "b": b,
                    "overall": compared(translations[a], translations[b], references, list(range(len(references)))),
                    "by_source_length": {
                        name: compared(translations[a], translations[b], references, bucket)
                        for name, bucket in bucket_rows.items()
                    },
                }
            )
        elif {a, b}.isdisjoint(translations) and {a, b} <= set(rows) and (a, b) in stored_differences:
            differences.append(stored_differences[a, b])
        elif {a, b} & set(translations):
            log(f"{a} - {b}: not compared (one of the two has no weights here)")
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


def stored_comparison(path: Path) -> dict:
    """The comparison stored at `path` where it is of the same test split; else one with nothing in it."""
    stored = json.loads(path.read_text()) if path.exists() else {}
    return stored if stored.get("split") == TEST_SPLIT else {"models": {}, "differences": []}


def compared(hypotheses_a: list[str], hypotheses_b: list[str], references: list[str], rows: list[int]) -> dict | None:
    """{"bleu": PairedDifference fields, "chrf": ..} of system a against system b on the sentences `rows`;
    None where there are none."""
    if not rows:
        return None
    pair = paired_translation_differences(
        [hypotheses_a[i] for i in rows], [hypotheses_b[i] for i in rows], [references[i] for i in rows], BOOTSTRAP_SEED
    )
    return {metric: asdict(difference) for metric, difference in pair.items()}
