"""The memory-content study of a working-memory checkpoint on text of
different difficulty (paper 004, section 5): for every domain its BLEU with
memory, with the memory masked and without memory, and the memory-content
analyses. Written to <checkpoint>/memory_analysis.json, which
docs/results.md is generated from.

Domains: a Multi30k (German-English) model is read on its own captions and
on WMT-14 news (newstest2014, never trained on); a Russian-English model on
the held-out Tatoeba, WMT news and TICO-19 portions.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tqdm import tqdm

from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointError, load_checkpoint
from inference.core.family import capabilities_of
from inference.core.places import resolve_data_dir
from inference.runs.memory_corpus import analyse_memory_corpus
from training.data.corpora import CORPORA, read_de_en_news
from training.data.translation import Pair

ANALYSIS_FILE = "memory_analysis.json"
EXAMPLES_KEPT = 5


def domain_sets(corpus: str, data_dir: Path) -> dict[str, tuple[str, list[Pair]]]:
    """split name -> (domain label, pairs) for the model's corpus."""
    found = CORPORA[corpus]
    splits = found.read(data_dir)
    sets = {split: (found.domains[split], splits[split]) for split in found.test_splits}
    if corpus == "multi30k":
        sets["newstest2014"] = ("WMT-14 news (out of domain)", read_de_en_news(data_dir))
    return sets


def memory_length_counts(lengths: list[int], memory_size: int) -> list[int]:
    """[k] sentences whose memory holds exactly k tokens, k = 0 .. memory_size: shows
    whether the model writes memory, and whether it always fills it."""
    return [lengths.count(k) for k in range(memory_size + 1)]


def analyse_checkpoint(
    folder: str | Path, data_dir: str | Path | None = None, device: str = "auto", max_sentences: int = 1000
) -> Path:
    """Run the study on every domain (the first `max_sentences` pairs of each) and write the JSON; returns its path."""
    folder = Path(folder)
    loaded = load_checkpoint(folder, device)
    if Capability.WORKING_MEMORY not in capabilities_of(loaded.config):
        raise CheckpointError(f"{folder} is not a working-memory model")
    domains = {}
    for split, (label, pairs) in tqdm(
        domain_sets(loaded.meta.get("corpus", "multi30k"), resolve_data_dir(data_dir)).items(),
        desc="memory analysis",
        unit="domain",
    ):
        pairs = pairs[:max_sentences]
        sources, references = [s for s, _ in pairs], [r for _, r in pairs]
        start = time.monotonic()
        result = analyse_memory_corpus(loaded, sources, references)
        domains[split] = {
            "domain": label,
            "sentences": len(pairs),
            "mean_source_words": sum(len(s.split()) for s in sources) / len(sources),
            **{metric: result[metric] for metric in ("bleu", "chrf", "length_ratio")},
            "memory_length_counts": memory_length_counts([len(m) for m in result["memory"]], loaded.config.memory_size),
            "summary": result["summary"],
            "examples": [
                {"source": s, "memory": m, "translation": t, "reference": r}
                for s, m, t, r in list(zip(sources, result["memory"], result["translations"], references))[
                    :EXAMPLES_KEPT
                ]
            ],
            "seconds": round(time.monotonic() - start, 1),
        }
        tqdm.write(
            f"{split}: BLEU {result['bleu']}, chrF {result['chrf']}, "
            f"mean unique memory tokens {result['summary']['unique_tokens']['mean_unique']:.2f}"
        )
    out = folder / ANALYSIS_FILE
    out.write_text(
        json.dumps(
            {"model": folder.name, "max_sentences": max_sentences, "domains": domains}, indent=1, ensure_ascii=False
        )
        + "\n"
    )
    return out
