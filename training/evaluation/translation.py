"""Translation quality: decoding and BLEU/chrF (inference.runs.translate and
inference.analyses.quality, the code the app runs), and the memory-size lesion sweep."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import groupby

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from inference.analyses.quality import corpus_quality
from inference.core.capabilities import Capability, config_of
from inference.core.family import LoadedModel, capabilities_of
from inference.core.interventions import NO_INTERVENTIONS, Interventions
from inference.core.tokenizer import TextTokenizer
from inference.corpus_jobs.job import run_in_process
from inference.corpus_jobs.states import sweep_job
from inference.runs.lesion import lesion_sizes
from inference.runs.memory_corpus import memory_lesions
from inference.runs.translate import BATCH_SIZE, translate_all
from training.data.translation import Pair, make_batch, tokenize_pairs

EVAL_BATCH_SIZE = BATCH_SIZE


def bleu_and_chrf(
    model: nn.Module,
    tokenizer: TextTokenizer,
    pairs: list[Pair],
    batch_size: int = EVAL_BATCH_SIZE,
    interventions: Interventions | None = None,
    desc: str = "translating",
) -> tuple[float, float]:
    """Corpus BLEU and chrF of greedy translations against the references;
    a progress bar named `desc` counts the sentences translated."""
    sources, references = zip(*pairs)
    with tqdm(desc=desc, total=len(sources), unit="sentence") as bar:
        translations = translate_all(model, tokenizer, sources, batch_size, interventions, on_batch=bar.update)
    quality = corpus_quality(translations, references)
    return quality.bleu, quality.chrf


@torch.no_grad()
def perplexity(
    model: nn.Module, tokenizer: TextTokenizer, pairs: list[Pair], batch_size: int = EVAL_BATCH_SIZE
) -> float:
    """Per-token perplexity of the references, teacher-forced (every target token and the EOS scored), without
    label smoothing. Sources of one length are scored together, so no score depends on another source's padding."""
    model.eval()
    device = next(model.parameters()).device
    examples = tokenize_pairs(tokenizer, pairs, max_len=10**9)
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]))
    nll, tokens = 0.0, 0
    for _, same_length in groupby(order, key=lambda i: len(examples[i][0])):
        group = list(same_length)
        for start in range(0, len(group), batch_size):
            batch = make_batch([examples[i] for i in group[start : start + batch_size]], tokenizer).to(device)
            logits = model(batch.src_ids, batch.tgt_in)  # [b, t, vocab]
            nll += F.cross_entropy(
                logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=tokenizer.pad_id, reduction="sum"
            ).item()
            tokens += batch.n_targets(tokenizer.pad_id)
    return math.exp(nll / tokens)


def score_splits(
    model: nn.Module, tokenizer: TextTokenizer, splits: dict[str, list[Pair]], batch_size: int = EVAL_BATCH_SIZE
) -> dict:
    """{"bleu": {split: ..}, "chrf": {split: ..}}, as metrics.json stores them."""
    scores = {
        split: bleu_and_chrf(model, tokenizer, pairs, batch_size, desc=f"BLEU {split}")
        for split, pairs in splits.items()
    }
    return {
        "bleu": {split: bleu for split, (bleu, _) in scores.items()},
        "chrf": {split: chrf for split, (_, chrf) in scores.items()},
    }


def lesion_sweep(
    model: nn.Module,
    tokenizer: TextTokenizer,
    pairs: list[Pair],
    memory_sizes: Sequence[int],
    batch_size: int = EVAL_BATCH_SIZE,
    held: Interventions = NO_INTERVENTIONS,
) -> dict:
    """{"memory_size", "bleu", "chrf", "length_ratio"}: the model run at each inference memory size, by the corpus
    job the app's lesion sweeps run (inference.corpus_jobs.states.sweep_job). Sizes above the model's
    max_memory_size are skipped: it allows no more. `held`: a lesion at every size too (a working memory's mask)."""
    sources, references = (list(side) for side in zip(*pairs))
    sizes = [k for k in memory_sizes if k <= config_of(model).max_memory_size]
    loaded = LoadedModel("lesion sweep", model, tokenizer)
    job = sweep_job(loaded, sources, references, sizes, batch_size, held)
    with tqdm(desc="lesion sweep", total=len(job.batches), unit="batch") as bar:
        return run_in_process(job, loaded, on_batch=lambda done: bar.update(1))


def lesion_table(
    model: nn.Module, tokenizer: TextTokenizer, pairs: list[Pair], batch_size: int = EVAL_BATCH_SIZE
) -> dict:
    """The lesion sweep stored in metrics.json: the paper's sizes plus the
    trained size, so the table always shows the unlesioned model too; for a
    working-memory model also "masked_bleu", BLEU with the memory mask."""
    config = config_of(model)
    table = lesion_sweep(model, tokenizer, pairs, lesion_sizes(config.memory_size, config.max_memory_size), batch_size)
    if Capability.WORKING_MEMORY in capabilities_of(config):
        masked = lesion_sweep(model, tokenizer, pairs, [config.memory_size], batch_size, memory_lesions()["masked"])
        table["masked_bleu"] = masked["bleu"][0]
    return table
