"""A working-memory model over a corpus: its memory and translations, the
memory-content analyses, and BLEU, chrF and the length ratio with memory, with
the memory masked and without memory (the paper's Table 3 lesions).

`generate_memory_corpus` runs the model (a caller may run it chunk by chunk,
e.g. to let other requests use the model in between); `summarise_memory_corpus`
turns the runs into the analyses without running the model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from torch import nn

from inference.analyses.memory_content import MemoryRecord, memory_content_summary
from inference.analyses.quality import corpus_quality
from inference.core.capabilities import Capability
from inference.core.family import LoadedModel, capabilities_of
from inference.core.tokenizer import TextTokenizer
from inference.families.working_memory.generation import generate_batches
from inference.families.working_memory.lesions import memory_lesions
from inference.runs.translate import BATCH_SIZE, MAX_NEW_TOKENS, SEED, length_sorted_batches, translate_all


def wm_generate_all(
    model: nn.Module, tokenizer: TextTokenizer, sources: Sequence[str], batch_size: int = BATCH_SIZE, seed: int = SEED
) -> list:
    """Memory and translation of every source (the family's examples), in the order of `sources`, in the batches
    every corpus run uses; batch i samples with seed + i."""
    batches = length_sorted_batches(model, tokenizer, sources, batch_size)
    return generate_batches(model, batches, len(sources), MAX_NEW_TOKENS, seed=seed)


@dataclass
class MemoryCorpusRun:
    translations: list[str]
    memory_pieces: list[list[str]]  # vocabulary pieces ("▁dog", "s"), per sentence
    memory_tokens: list[list[str]]  # display form ("dog", "##s"), per sentence
    lesioned: dict[str, list[str]] = field(default_factory=dict)  # a memory_lesions() name -> translations


def generate_memory_corpus(
    loaded: LoadedModel, sources: Sequence[str], with_lesions: bool, batch_size: int = BATCH_SIZE
) -> MemoryCorpusRun:
    model, tokenizer = loaded.model, loaded.tokenizer
    if Capability.WORKING_MEMORY not in capabilities_of(loaded.config):
        raise ValueError(f"{loaded.name} has no working memory to analyse")
    examples = wm_generate_all(model, tokenizer, sources, batch_size)
    run = MemoryCorpusRun(
        translations=[tokenizer.decode(e.translation) for e in examples],
        memory_pieces=[tokenizer.pieces(e.memory) for e in examples],
        memory_tokens=[tokenizer.display_tokens(e.memory) for e in examples],
    )
    if with_lesions:
        run.lesioned = {
            name: translate_all(model, tokenizer, sources, batch_size, lesion)
            for name, lesion in memory_lesions().items()
        }
    return run


def condition_outputs(runs: Sequence[MemoryCorpusRun]) -> dict[str, list[str]]:
    """{"memory": translations, "masked", "no_memory": translations under that lesion} over runs made with
    lesions, in order."""
    outputs = {"memory": [t for run in runs for t in run.translations]}
    return outputs | {name: [t for run in runs for t in run.lesioned[name]] for name in memory_lesions()}


def summarise_memory_corpus(runs: Sequence[MemoryCorpusRun], references: Sequence[str] | None) -> dict:
    """{"translations", "memory" (display tokens per sentence), "summary"
    (memory_content_summary), and "bleu", "chrf", "length_ratio": each {"memory", "masked", "no_memory"},
    or None without references} over the runs, in order."""
    translations = [t for run in runs for t in run.translations]
    records = [MemoryRecord(t, pieces) for run in runs for t, pieces in zip(run.translations, run.memory_pieces)]
    scores: dict[str, dict[str, float] | None] = dict.fromkeys(("bleu", "chrf", "length_ratio"))
    if references is not None:
        qualities = {
            name: corpus_quality(hypotheses, references) for name, hypotheses in condition_outputs(runs).items()
        }
        scores = {metric: {name: getattr(q, metric) for name, q in qualities.items()} for metric in scores}
    return {
        "translations": translations,
        "memory": [m for run in runs for m in run.memory_tokens],
        "summary": memory_content_summary(records),
        **scores,
    }
