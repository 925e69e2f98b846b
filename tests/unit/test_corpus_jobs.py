"""Corpus jobs as partial states: run as shards and merged, every job gives exactly what one process gives — the
same BLEU as translating the corpus at each memory size, the same trigger examples as mining it in one pass."""

from __future__ import annotations

from functools import reduce

import pytest
import torch

from inference.analyses.ff_mining import MiningState, merge_states
from inference.analyses.ff_values import ff_memories
from inference.analyses.quality import corpus_quality
from inference.core.family import LoadedModel
from inference.core.interventions import Interventions, MemorySize
from inference.corpus_jobs.job import CorpusJob, contiguous_shards, run_in_process, run_shard
from inference.corpus_jobs.states import memory_job, mine_triggers, mining_job, sweep_job, translation_job
from inference.runs.translate import translate_all
from tests.conftest import TINY_CORPUS, make_tiny, make_tiny_language_model, make_tiny_working_memory

GERMAN, ENGLISH = TINY_CORPUS[0::2], TINY_CORPUS[1::2]


def numbered(sentences: list[str], count: int) -> list[str]:
    """`count` sentences, each a corpus sentence with its number (lengths vary, so batches pad differently)."""
    return [f"{sentences[n % len(sentences)]} {' '.join(['und'] * (n % 5))} {n}".strip() for n in range(count)]


def sharded(job: CorpusJob, loaded: LoadedModel, shards: int):
    """The job run as contiguous shards, their states merged in shard order."""
    states = [run_shard(job, loaded, numbers) for numbers in contiguous_shards(len(job.batches), shards)]
    return reduce(lambda earlier, later: earlier.merge(later), states).finalize()


def test_contiguous_shards_cover_every_batch_once_in_order():
    assert contiguous_shards(10, 3) == [range(0, 3), range(3, 7), range(7, 10)]
    assert contiguous_shards(2, 5) == [range(0, 1), range(1, 2)]
    assert [n for shard in contiguous_shards(17, 4) for n in shard] == list(range(17))


def test_a_sharded_sweep_gives_the_bleu_of_each_memory_size_translated_whole(tiny_tokenizer):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    sources, references = numbered(GERMAN, 23), numbered(ENGLISH, 23)
    job = sweep_job(loaded, sources, references, [0, 3, 5], batch_size=4)
    assert len(job.batches) == 3 * 6
    result = sharded(job, loaded, 4)
    for size, bleu, chrf in zip(result["memory_size"], result["bleu"], result["chrf"]):
        at_size = Interventions.of(MemorySize(size=size))  # the plain path: translate all, score once
        whole = corpus_quality(translate_all(loaded.model, loaded.tokenizer, sources, 4, at_size), references)
        assert (bleu, chrf) == (whole.bleu, whole.chrf)
    assert result == run_in_process(job, loaded)


def test_a_sharded_corpus_gives_the_translations_bleu_and_attention_blocks_of_one_pass(tiny_tokenizer):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    sources, references = numbered(GERMAN, 40), numbered(ENGLISH, 40)
    job = translation_job(loaded, sources, references, mixed=True, max_new_tokens=12)
    assert len(job.batches) == 3
    whole = run_in_process(job, loaded)
    assert sharded(job, loaded, 3) == whole
    memory_rows = sum(block["memory_queries"] for block in whole["blocks"])
    assert memory_rows > 0 and len(whole["translations"]) == 40


def test_a_sharded_working_memory_corpus_gives_the_memory_and_its_contents_of_one_pass(tiny_tokenizer):
    loaded = make_tiny_working_memory(tiny_tokenizer)
    sources, references = numbered(GERMAN, 140), numbered(ENGLISH, 140)
    job = memory_job(sources, references)
    assert len(job.batches) == 3
    whole = run_in_process(job, loaded)
    assert sharded(job, loaded, 2) == whole
    assert sum(len(memory) for memory in whole["memory"]) > 0  # the model wrote memory to summarise


@pytest.mark.parametrize("shards", [2, 3])
def test_sharded_mining_keeps_the_trigger_examples_of_one_pass(tiny_tokenizer, shards):
    loaded = LoadedModel("tiny-lm", make_tiny_language_model(tiny_tokenizer), tiny_tokenizer)
    texts = numbered(ENGLISH, 50)
    layers = ff_memories(loaded.model).layers
    state = sharded(mining_job(texts, None, 5, layers), loaded, shards)
    whole = mine_triggers(loaded, texts, batch_size=16, top_k=5)
    assert state.sentences_consumed == whole.sentences_consumed == 50
    for layer in layers:
        assert torch.equal(state.coefficients[layer], whole.coefficients[layer])
        assert torch.equal(state.sentences[layer], whole.sentences[layer])
        assert torch.equal(state.positions[layer], whole.positions[layer])


def test_merged_trigger_lists_break_a_tie_towards_the_earlier_sentence():
    """Two shards' lists of one key (top 3): coefficients 2.0 (sentence 9), 1.0 (sentences 4 and 12) and an
    empty slot; merged, the tie at 1.0 keeps sentence 4 before 12 whichever shard holds which."""
    inf = float("-inf")

    def state(coefficients, sentences, positions, consumed):
        t = torch.tensor
        return MiningState(3, consumed, {"l": t([coefficients])}, {"l": t([sentences])}, {"l": t([positions])})

    later = state([2.0, 1.0, inf], [9, 12, -1], [3, 1, -1], 8)
    earlier = state([1.0, 0.5, 0.25], [4, 0, 2], [7, 2, 5], 8)
    merged = merge_states(earlier, later)
    assert merged.coefficients["l"].tolist() == [[2.0, 1.0, 1.0]]
    assert merged.sentences["l"].tolist() == [[9, 4, 12]]
    assert merged.positions["l"].tolist() == [[3, 7, 1]]
    assert merged.sentences_consumed == 16
    assert merge_states(later, earlier).sentences["l"].tolist() == [[9, 4, 12]]  # by sentence, not by shard
