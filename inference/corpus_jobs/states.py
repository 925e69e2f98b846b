"""The corpus jobs as partial states (inference.corpus_jobs.job): a lesion sweep, an uploaded corpus translated
(BLEU, chrF, attention blocks), a working-memory corpus's memory and its memory-content analyses, and FF-key
trigger mining. Each job is built by a function here from the corpus alone; its batches are the ones a single
process runs, so that sharding changes no number:

- translations are kept per corpus row and scored once, at the end, in row order;
- attention blocks are kept per batch (integer row counts and per-batch sums) and merged in batch order;
- memory runs are kept per chunk and summarised in chunk order;
- trigger examples are a top-k merged in a total order (ff_mining.merge_states)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial

import torch

from inference.analyses.attention import attention_stacks
from inference.analyses.blocks import HeadBlocks, attention_blocks, merge_blocks
from inference.analyses.ff_mining import MiningState, add_batch, merge_states
from inference.analyses.quality import corpus_quality
from inference.core.family import LoadedModel
from inference.core.hook_names import EVERY_PATTERN
from inference.core.interventions import NO_INTERVENTIONS, Interventions, MemorySize
from inference.core.tracing import run_with_trace
from inference.corpus_jobs.job import CorpusJob, run_shard
from inference.runs.memory_corpus import MemoryCorpusRun, generate_memory_corpus, summarise_memory_corpus
from inference.runs.translate import BATCH_SIZE, batch_plan, translate_rows
from inference.runs.trigger_mining import key_counts, mined_batch

TRACE_BATCH = 16  # sentences an uploaded corpus traces, and trigger mining reads, per batch
MEMORY_CHUNK = 64  # sentences of a working-memory corpus per batch


# ---------------------------------------------------------------- lesion sweep: quality at every memory size


@dataclass
class SweepState:
    sizes: list[int]
    references: list[str]
    translations: dict[int, dict[int, str]] = field(default_factory=dict)  # memory size -> row -> translation

    def update(self, observed: tuple[int, dict[int, str]]) -> None:
        size, rows = observed
        self.translations.setdefault(size, {}).update(rows)

    def merge(self, other: SweepState) -> SweepState:
        for size, rows in other.translations.items():
            self.translations.setdefault(size, {}).update(rows)
        return self

    def finalize(self) -> dict:
        """{"memory_size", "bleu", "chrf", "length_ratio"}: one entry per size, in the sweep's order."""
        qualities = [
            corpus_quality([self.translations[size][row] for row in range(len(self.references))], self.references)
            for size in self.sizes
        ]
        return {
            "memory_size": self.sizes,
            "bleu": [quality.bleu for quality in qualities],
            "chrf": [quality.chrf for quality in qualities],
            "length_ratio": [quality.length_ratio for quality in qualities],
        }


def sweep_job(
    loaded: LoadedModel,
    sources: list[str],
    references: list[str],
    sizes: list[int],
    batch_size: int = BATCH_SIZE,
    held: Interventions = NO_INTERVENTIONS,
) -> CorpusJob:
    """Translation quality of `sources` at each inference memory size, under the lesion `held` at every size too
    (a working memory's mask), every size's batches those of inference.runs.translate: the one driver of a lesion
    sweep, which the app's jobs, the CLI and training's metrics run."""
    plan = batch_plan(loaded.tokenizer, sources, batch_size)
    batches = [(size, number, rows) for size in sizes for number, rows in enumerate(plan)]
    observe = partial(_translate_at_size, sources, held)
    return CorpusJob(batches, observe, partial(SweepState, sizes, references))


def _translate_at_size(
    sources: list[str], held: Interventions, loaded: LoadedModel, _: int, batch: tuple
) -> tuple[int, dict[int, str]]:
    size, number, rows = batch
    lesion = Interventions.of(MemorySize(size=size), *held)
    return size, translate_rows(loaded.model, loaded.tokenizer, sources, rows, number, lesion)


# ---------------------------------------------------------------- an uploaded corpus: translations and attention


def length_batches(lengths: list[int], size: int, mixed: bool) -> list[list[int]]:
    """Indices of sources to trace together, at most `size` a batch, in order of length (little padding);
    with `mixed` False, every batch holds sources of one length (a family that traces one length at a time)."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    one_length = [[i for i in order if lengths[i] == n] for n in dict.fromkeys(lengths[i] for i in order)]
    runs = [order] if mixed else one_length
    return [run[start : start + size] for run in runs for start in range(0, len(run), size)]


@dataclass
class TranslationState:
    rows: int
    references: list[str] | None
    translations: dict[int, str] = field(default_factory=dict)  # row -> translation
    blocks: dict[int, list[HeadBlocks]] = field(default_factory=dict)  # batch number -> its attention blocks

    def update(self, observed: tuple[int, dict[int, str], list[HeadBlocks]]) -> None:
        number, translations, blocks = observed
        self.translations.update(translations)
        self.blocks[number] = blocks

    def merge(self, other: TranslationState) -> TranslationState:
        self.translations.update(other.translations)
        self.blocks.update(other.blocks)
        return self

    def finalize(self) -> dict:
        """{"translations" (in row order), "quality" (with references), "blocks" (merged in batch order)}."""
        translations = [self.translations[row] for row in range(self.rows)]
        quality = asdict(corpus_quality(translations, self.references)) if self.references else None
        merged = merge_blocks([self.blocks[number] for number in sorted(self.blocks)])
        return {"translations": translations, "quality": quality, "blocks": [asdict(b) for b in merged]}


def translation_job(
    loaded: LoadedModel, sources: list[str], references: list[str] | None, mixed: bool, max_new_tokens: int
) -> CorpusJob:
    """Translations of `sources` and the attention block mass over them (`mixed` False: the family traces one
    source length at a time), TRACE_BATCH sources a batch."""
    lengths = [len(loaded.tokenizer.encode(source)) for source in sources]
    batches = length_batches(lengths, TRACE_BATCH, mixed)
    observe = partial(_trace_rows, sources, max_new_tokens)
    return CorpusJob(batches, observe, partial(TranslationState, len(sources), references))


def _trace_rows(
    sources: list[str], max_new_tokens: int, loaded: LoadedModel, number: int, rows: list[int]
) -> tuple[int, dict[int, str], list[HeadBlocks]]:
    patterns = [EVERY_PATTERN] if attention_stacks(loaded.model) else []  # a state model has no attention
    trace = run_with_trace(
        loaded,
        [sources[i] for i in rows],
        names=patterns,
        interventions=NO_INTERVENTIONS,
        max_new_tokens=max_new_tokens,
    )
    return number, dict(zip(rows, trace.outputs)), attention_blocks(trace)


# ---------------------------------------------------------------- a working-memory corpus: memory and its contents


@dataclass
class MemoryState:
    references: list[str] | None
    runs: dict[int, MemoryCorpusRun] = field(default_factory=dict)  # chunk number -> its run

    def update(self, observed: tuple[int, MemoryCorpusRun]) -> None:
        number, run = observed
        self.runs[number] = run

    def merge(self, other: MemoryState) -> MemoryState:
        self.runs.update(other.runs)
        return self

    def finalize(self) -> dict:
        """summarise_memory_corpus of the chunks' runs in chunk order."""
        return summarise_memory_corpus([self.runs[number] for number in sorted(self.runs)], self.references)


def memory_job(sources: list[str], references: list[str] | None) -> CorpusJob:
    """A working-memory model's memory and translations of `sources` (with references, under the memory lesions
    too), MEMORY_CHUNK sources a batch, and the memory-content analyses of them."""
    batches = [
        list(range(start, min(start + MEMORY_CHUNK, len(sources)))) for start in range(0, len(sources), MEMORY_CHUNK)
    ]
    observe = partial(_remember_rows, sources, references is not None)
    return CorpusJob(batches, observe, partial(MemoryState, references))


def _remember_rows(
    sources: list[str], with_lesions: bool, loaded: LoadedModel, number: int, rows: list[int]
) -> tuple[int, MemoryCorpusRun]:
    return number, generate_memory_corpus(loaded, [sources[i] for i in rows], with_lesions)


# ---------------------------------------------------------------- FF-key trigger mining


@dataclass
class MiningPartial:
    top_k: int
    state: MiningState | None = None  # made by the first batch, which knows the layers and their keys

    def update(self, observed: tuple[int, dict[str, torch.Tensor], list[int]]) -> None:
        first, keys, lengths = observed
        if self.state is None:
            self.state = MiningState.empty({layer: k.shape[-1] for layer, k in keys.items()}, self.top_k)
        self.state = add_batch(self.state, keys, lengths, first)

    def merge(self, other: MiningPartial) -> MiningPartial:
        if self.state is None or other.state is None:
            return self if other.state is None else other
        self.state = merge_states(self.state, other.state)
        return self

    def finalize(self) -> MiningState:
        if self.state is None:
            raise ValueError("nothing was mined: the corpus is empty")
        return self.state


def mining_job(
    texts: Sequence[str], sources: Sequence[str] | None, top_k: int, layers: list[str], batch_size: int = TRACE_BATCH
) -> CorpusJob:
    """The running top-k trigger examples of every key of `layers` over `texts` (a translator's decoder
    teacher-forced on each after its source; inference.runs.trigger_mining), `batch_size` texts a batch."""
    batches = [range(start, min(start + batch_size, len(texts))) for start in range(0, len(texts), batch_size)]
    return CorpusJob(batches, partial(_mine_rows, texts, sources, layers), partial(MiningPartial, top_k))


def mine_triggers(
    loaded: LoadedModel,
    texts: Sequence[str],
    sources: Sequence[str] | None = None,
    state: MiningState | None = None,
    batch_size: int = TRACE_BATCH,
    top_k: int = 50,
    on_batch: Callable[[MiningState], None] | None = None,
) -> MiningState:
    """The mining job over a whole corpus, run here: the trigger examples of every FF key the model reads as a
    memory (ff_values.ff_memories). To resume, pass the same corpus, batch size and a saved state: the job goes on
    from the batch after state.sentences_consumed (top_k only sizes a new state). `on_batch` sees the state after
    every batch (e.g. to save it and report progress)."""
    counts = key_counts(loaded.model)
    if state is not None:
        held = {layer: len(coefficients) for layer, coefficients in state.coefficients.items()}
        if list(held.items()) != list(counts.items()):
            raise ValueError(f"the state holds layers {held}; the model has {counts}")
        if state.sentences_consumed > len(texts):
            raise ValueError(
                f"the state has consumed {state.sentences_consumed} sentences; the corpus has {len(texts)}"
            )
        if state.sentences_consumed % batch_size and state.sentences_consumed != len(texts):
            raise ValueError(f"the state stopped inside a batch of {batch_size}: resume with the batch size it ran")
    start = state if state is not None else MiningState.empty(counts, top_k)
    job = mining_job(texts, sources, top_k, list(counts), batch_size)
    gathered = MiningPartial(top_k, start)
    first = -(-start.sentences_consumed // batch_size)  # batches done, rounded up at the corpus's end
    report = None if on_batch is None else lambda _: on_batch(gathered.finalize())
    return run_shard(job, loaded, range(first, len(job.batches)), report, start=gathered).finalize()


def _mine_rows(
    texts: Sequence[str], sources: Sequence[str] | None, layers: list[str], loaded: LoadedModel, _: int, rows: range
) -> tuple[int, dict[str, torch.Tensor], list[int]]:
    return rows.start, *mined_batch(loaded, texts, sources, layers, slice(rows.start, rows.stop))
