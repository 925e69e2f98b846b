"""Does a segment language model use what it carries from one segment to the next?

A segment-recurrent model (inference/families/recurrent_memory: RMT, Transformer-XL)
reads each scoring window segment by segment and hands something to the next
segment: RMT its memory tokens, Transformer-XL its cache of earlier layer
inputs. This study scores the first `articles` articles of the enwiki
validation split twice, in the windows the run's own perplexity used
(metrics.json's context and stride; training.evaluation.perplexity.score_stream):

- as trained;
- with the carried state removed: RMT's memory reset to its initial value
  at every segment (the ResetMemory intervention on each segment of a window),
  Transformer-XL without its cache (the same weights in the family's
  no-cache configuration, cache_length 0).

It records both token perplexities, the stream's size, the per-article
totals of both runs and the paired bootstrap difference (without minus as
trained: above zero when the carried state helps) with its 95% interval over
the articles (training.evaluation.bootstrap, seed BOOTSTRAP_SEED), under the
key "carried_state" of `<checkpoint>/metrics.json`, where the results report and
the app's Segments page read it.

Run (one thread: 30 s of CPU a model, 3 minutes wall on a shared 2-core machine; enwiki is read once):

    OMP_NUM_THREADS=1 .venv/bin/python -m training carried-state \\
        checkpoints/segment_lm/lm_seg50_rmt1 checkpoints/segment_lm/lm_seg50_xl10 --articles 120
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import torch
from torch import nn

from inference.analyses.carried_state import AS_TRAINED, SPLIT, WITHOUT
from inference.core.applied_interventions import applied_interventions
from inference.core.capabilities import Capability, config_of
from inference.core.checkpoint import CARRIED_STATE_KEY, CheckpointError, load_checkpoint, store_study
from inference.core.family import LoadedModel, build_model, capabilities_of
from inference.core.interventions import Interventions, ResetMemory
from inference.core.model_results import ModelResults, needed
from inference.core.places import resolve_data_dir
from inference.core.segment_memory import SegmentConfig, segment_config
from inference.core.tokenizer import TextTokenizer
from inference.corpora.multi30k import DataError
from training.data.lm_corpora import Document, read_enwiki
from training.data.lm_streams import evaluation_stream, tokenize_documents
from training.evaluation.bootstrap import LEVEL, RESAMPLES, paired_perplexity_difference
from training.evaluation.perplexity import LogitsFn, document_totals, score_stream, scoring_windows, unscored_ids

ARTICLES = 120  # the first articles of enwiki validation scored
BOOTSTRAP_SEED = 0  # the seed of the paired resamplings (as training.report.segment_lm)


def validation_stream(tokenizer: TextTokenizer, documents: Sequence[Document]) -> torch.Tensor:  # [n] token ids
    """The documents as the run's evaluation reads enwiki validation: each
    document's tokens then EOS, with one EOS in front (training.loop.lm_run.evaluation_texts)."""
    return evaluation_stream(tokenize_documents(tokenizer, documents), tokenizer.eos_id)


def scoring_context(results: ModelResults) -> tuple[int, int]:
    """(context, stride) of the run's own perplexity windows, from its metrics.json."""
    counts = needed(results.perplexity_counts, "perplexity_counts: not a language-model run")
    return counts["context"], counts["stride"]


def removed_description(config: SegmentConfig) -> str:
    """What removing the carried state means for this model (ValueError when it carries nothing)."""
    parts = ["memory reset to its initial value at every segment"] if config.memory_size else []
    parts += ["no cache (the same weights with cache_length 0)"] if config.cache_length else []
    if not parts:
        raise ValueError("the model carries nothing between segments (no memory tokens, no cache)")
    return "; ".join(parts)


def reset_interventions(segment_length: int, context: int) -> Interventions:
    """ResetMemory on every segment of a window after the first (the first starts from the initial memory)."""
    segments = math.ceil(context / segment_length)
    return Interventions.of(*(ResetMemory(segment=s) for s in range(1, segments)))


def without_cache(model: nn.Module) -> nn.Module:
    """The same weights in the family's configuration without a cache (cache_length 0), in eval mode."""
    copy = build_model(replace(config_of(model), cache_length=0))
    copy.load_state_dict(model.state_dict())
    return copy.to(next(model.parameters()).device).eval()


def without_carried_state(model: nn.Module, context: int) -> LogitsFn:
    """ids [b, context] -> logits [b, context, vocab] of `model` (a segment model) with nothing carried between
    segments: no cache, and the memory reset at every segment (module doc)."""
    config = segment_config(config_of(model))
    removed_description(config)  # raises when there is nothing to remove
    reader = without_cache(model) if config.cache_length else model
    if not config.memory_size:
        return reader
    interventions = reset_interventions(config.segment_length, context)

    def logits(ids: torch.Tensor) -> torch.Tensor:  # [b, context] -> [b, context, vocab]
        with applied_interventions(reader, interventions) as memory_size:
            return reader(ids, memory_size)

    return logits


def scored_run(
    logits_fn: LogitsFn,
    stream: torch.Tensor,  # [n] token ids
    tokenizer: TextTokenizer,
    pad_id: int,
    context: int,
    stride: int,
    desc: str,
    device: torch.device | str = "cpu",
) -> dict:
    """One scoring of the stream: token perplexity, summed NLL, counts, per-document totals."""
    score = score_stream(logits_fn, stream, context, unscored_ids(tokenizer), pad_id, stride, device=device, desc=desc)
    return {
        "perplexity": round(score.token_perplexity, 3),
        "nll": round(score.nll, 3),
        "tokens": score.tokens,
        "unscored": score.unscored,
        "documents": document_totals(stream, tokenizer.eos_id, score),
    }


def carried_state_record(
    loaded: LoadedModel, stream: torch.Tensor, articles: int, context: int, stride: int, device: torch.device | str
) -> dict:
    """Both scorings of `stream` (the first `articles` validation articles) and their paired difference."""
    model, config = loaded.model.eval(), segment_config(loaded.config)
    runs = {
        AS_TRAINED: scored_run(model, stream, loaded.tokenizer, config.pad_id, context, stride, AS_TRAINED, device),
        WITHOUT: scored_run(
            without_carried_state(model, context), stream, loaded.tokenizer, config.pad_id, context, stride, WITHOUT,
            device,
        ),
    }  # fmt: skip
    tokens = runs[AS_TRAINED]["documents"]["tokens"]
    if runs[WITHOUT]["documents"]["tokens"] != tokens:
        raise AssertionError("the two scorings counted different targets")  # the same stream and windows
    nll = {name: run["documents"]["nll"] for name, run in runs.items()}
    difference, low, high = paired_perplexity_difference(nll[WITHOUT], nll[AS_TRAINED], tokens, BOOTSTRAP_SEED)
    return {
        "model": loaded.name,
        "memory_setup": config.memory_setup,
        "memory_size": config.memory_size,
        "cache_length": config.cache_length,
        "segment_length": config.segment_length,
        "removed": removed_description(config),
        "text": {
            "split": SPLIT,
            "articles": articles,
            "documents_scored": len(tokens),
            "stream_tokens": len(stream),
            "scored": runs[AS_TRAINED]["tokens"],
            "unscored": runs[AS_TRAINED]["unscored"],
            "context": context,
            "stride": stride,
            "windows": len(scoring_windows(len(stream), context, stride)),
        },
        "perplexity": {name: run["perplexity"] for name, run in runs.items()},
        "nll": {name: run["nll"] for name, run in runs.items()},
        "difference": {
            "perplexity": difference,  # unrounded: the table rounds once (3 then 2 decimals turned +6.4354 into +6.43)
            "low": low,
            "high": high,
            "level": LEVEL,
            "resamples": RESAMPLES,
            "seed": BOOTSTRAP_SEED,
            "of": f"{WITHOUT} minus {AS_TRAINED}",
        },
        "documents": {"tokens": tokens, **{f"nll_{name}": values for name, values in nll.items()}},
    }


def measure_carried_state(
    folder: Path,
    data_dir: str | Path | None = None,
    articles: int = ARTICLES,
    device: str = "cpu",
    documents: Sequence[Document] | None = None,
) -> dict:
    """Score a segment language-model checkpoint with and without its carried state on the first
    `articles` enwiki validation articles (`documents`: the validation split, when already read)
    and write the record into <folder>/metrics.json (CARRIED_STATE_KEY); returns it."""
    folder = Path(folder)
    loaded = load_checkpoint(folder, device)
    if Capability.SEGMENTS not in capabilities_of(loaded.config):
        raise CheckpointError(f"{folder} reads no segments: it carries nothing between them to remove")
    context, stride = scoring_context(loaded.metrics)
    if documents is None:
        documents = read_enwiki(resolve_data_dir(data_dir))["val"]
    if articles < 1 or articles > len(documents):
        raise DataError(f"articles must lie in 1..{len(documents)} (the validation split), got {articles}")
    stream = validation_stream(loaded.tokenizer, documents[:articles])
    record = carried_state_record(loaded, stream, articles, context, stride, loaded.device)
    store_study(folder, CARRIED_STATE_KEY, record)
    return record


def measure_checkpoints(
    folders: Sequence[Path],
    data_dir: str | Path | None = None,
    articles: int = ARTICLES,
    device: str = "cpu",
    log=print,
) -> list[dict]:
    """`measure_carried_state` for every folder, enwiki read once; each result said in a line."""
    documents = read_enwiki(resolve_data_dir(data_dir))["val"]
    records = []
    for folder in folders:
        record = measure_carried_state(Path(folder), articles=articles, device=device, documents=documents)
        d = record["difference"]
        log(
            f"{folder}: {record['perplexity'][AS_TRAINED]:.2f} as trained, {record['perplexity'][WITHOUT]:.2f} "
            f"without ({record['removed']}): {d['perplexity']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}] "
            f"on {record['text']['scored']:,} tokens; written to {Path(folder) / 'metrics.json'}"
        )
        records.append(record)
    return records
