"""The memory-content study of a working-memory checkpoint on text of
different difficulty (paper 004, section 5): for every domain its BLEU, chrF
and length ratio with memory, with the memory masked and without memory, each
lesion's paired bootstrap difference from the model with memory, and the
memory-content analyses. Written to <checkpoint>/memory_analysis.json, which
docs/results.md is generated from; the translations under each condition to
<checkpoint>/memory_analysis_outputs.json.gz, so the differences can be
recomputed without translating again.

Domains: a Multi30k (German-English) model is read on its own captions and
on WMT-14 news (newstest2014, never trained on); a Russian-English model on
the held-out Tatoeba, WMT news and TICO-19 portions.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from inference.core.capabilities import Capability
from inference.core.checkpoint import CheckpointError, load_checkpoint
from inference.core.family import LoadedModel, capabilities_of
from inference.core.places import resolve_data_dir
from inference.runs.memory_corpus import (
    condition_outputs,
    generate_memory_corpus,
    memory_lesions,
    summarise_memory_corpus,
)
from training.data.corpora import CORPORA, read_de_en_news
from training.data.translation import Pair
from training.evaluation.bootstrap import PairedDifference, paired_translation_differences
from training.evaluation.comparisons import BOOTSTRAP_SEED
from training.evaluation.outputs import write_outputs

ANALYSIS_FILE = "memory_analysis.json"
STUDY_OUTPUTS_FILE = "memory_analysis_outputs.json.gz"
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


def lesion_differences(outputs: dict[str, list[str]], references: list[str]) -> dict[str, dict[str, dict]]:
    """{lesion: {"bleu", "chrf": {"difference", "low", "high", "p_value"}}}: each memory_lesions() condition's
    translations minus those with memory ("memory"), paired on the same sentences."""
    return {
        lesion: {
            metric: asdict(difference)
            for metric, difference in paired_translation_differences(
                outputs[lesion], outputs["memory"], references, BOOTSTRAP_SEED
            ).items()
        }
        for lesion in memory_lesions()
    }


def study_domain(loaded: LoadedModel, pairs: list[Pair]) -> tuple[dict, dict[str, list[str]]]:
    """(the domain's record but its label, its translations under each condition) over `pairs`."""
    sources, references = [s for s, _ in pairs], [r for _, r in pairs]
    start = time.monotonic()
    run = generate_memory_corpus(loaded, sources, with_lesions=True)
    result = summarise_memory_corpus([run], references)
    outputs = condition_outputs([run])
    record = {
        "sentences": len(pairs),
        "mean_source_words": sum(len(s.split()) for s in sources) / len(sources),
        **{metric: result[metric] for metric in ("bleu", "chrf", "length_ratio")},
        "differences": lesion_differences(outputs, references),
        "memory_length_counts": memory_length_counts([len(m) for m in result["memory"]], loaded.config.memory_size),
        "summary": result["summary"],
        "examples": [
            {"source": s, "memory": m, "translation": t, "reference": r}
            for s, m, t, r in list(zip(sources, result["memory"], result["translations"], references))[:EXAMPLES_KEPT]
        ],
        "seconds": round(time.monotonic() - start, 1),
    }
    return record, outputs


def analyse_checkpoint(
    folder: str | Path, data_dir: str | Path | None = None, device: str = "auto", max_sentences: int = 1000
) -> Path:
    """Run the study on every domain (the first `max_sentences` pairs of each) and write the JSON; returns its path."""
    folder = Path(folder)
    loaded = load_checkpoint(folder, device)
    if Capability.WORKING_MEMORY not in capabilities_of(loaded.config):
        raise CheckpointError(f"{folder} is not a working-memory model")
    domains, stored = {}, {}
    for split, (label, pairs) in tqdm(
        domain_sets(loaded.record.corpus or "multi30k", resolve_data_dir(data_dir)).items(),
        desc="memory analysis",
        unit="domain",
    ):
        record, outputs = study_domain(loaded, pairs[:max_sentences])
        domains[split] = {"domain": label, **record}
        stored[split] = {"sentences": record["sentences"], "outputs": outputs}
        masked = record["differences"]["masked"]
        tqdm.write(
            f"{split}: BLEU {record['bleu']}, chrF {record['chrf']}, masked minus memory: "
            f"BLEU {PairedDifference(**masked['bleu']).text()}, chrF {PairedDifference(**masked['chrf']).text()}, "
            f"mean unique memory tokens {record['summary']['unique_tokens']['mean_unique']:.2f}"
        )
    write_outputs(folder, stored, STUDY_OUTPUTS_FILE)
    out = folder / ANALYSIS_FILE
    out.write_text(
        json.dumps(
            {"model": folder.name, "max_sentences": max_sentences, "domains": domains}, indent=1, ensure_ascii=False
        )
        + "\n"
    )
    return out
