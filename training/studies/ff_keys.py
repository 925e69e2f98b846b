"""The FF-memory study of a checkpoint (Geva et al., paper 003): trigger
examples mined over a corpus, key-value agreement, and how memories add up
to predictions, written beside the checkpoint:

- <checkpoint>/ff_triggers.json.gz: the compact trigger record
  (inference.analyses.ff_mining.compact_triggers), gzipped (its base64
  arrays of a small local vocabulary shrink to about 40%), which the app's
  key browser reads without the corpus;
- <checkpoint>/ff_analysis.json: per layer, the agreement (with its
  random-key baseline and the rank of w_i) and the aggregation summary;
  docs/results.md is generated from it.

Corpora. The language model is mined on a seeded sample of enwiki training
sentences (the text it learnt from, as the paper mines its model's training
data) and aggregated on enwiki validation sentences. A translation model's
decoder is mined on its training pairs and aggregated on its validation
pairs, teacher-forced on the references. Sentences longer than the model's
window are left out.

Mining is resumable: the running state is saved in the run folder every
SAVE_EVERY batches, and rerunning the same command goes on from there.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from inference.analyses.ff_aggregation import ff_aggregation, summarise_aggregation, value_tops
from inference.analyses.ff_agreement import LayerAgreement, key_value_agreement
from inference.analyses.ff_mining import MiningState, TriggerStore
from inference.analyses.ff_values import ff_memories, value_logits
from inference.core.capabilities import Capability
from inference.core.checkpoint import load_checkpoint
from inference.core.family import LoadedModel, capabilities_of
from inference.core.places import REPO_ROOT, resolve_data_dir
from inference.corpora.ff_study_files import ANALYSIS_FILE, TRIGGERS_FILE, write_triggers
from inference.corpus_jobs.states import mine_triggers
from inference.runs.trigger_mining import compact_triggers, prefix_stream, trace_texts
from training.data.corpora import CORPORA
from training.data.lm_corpora import read_enwiki

STATE_FILE = "mining_state.pt"
SAMPLE_SEED = 2024
SAVE_EVERY = 20  # batches
RANK_THRESHOLDS = (1, 10, 100)  # the analysis reports the share of keys whose w_i ranks below each


@dataclass
class StudyCorpus:
    """Texts to mine and to aggregate on, with the sources a translation decoder reads after
    (None for the language model)."""

    description: str
    texts: list[str]
    sources: list[str] | None
    eval_texts: list[str]
    eval_sources: list[str] | None


def study_corpus(loaded: LoadedModel, data_dir: Path, sentences: int, eval_sentences: int) -> StudyCorpus:
    """The model's corpus (module doc): `sentences` to mine, `eval_sentences` to aggregate on."""
    fits = _fits_window(loaded)
    if Capability.TRANSLATES not in capabilities_of(loaded.config):  # a language model: mined on enwiki
        documents = read_enwiki(data_dir)
        train = [s for document in documents["train"] for s in document]
        chosen = sorted(random.Random(SAMPLE_SEED).sample(range(len(train)), min(len(train), 2 * sentences)))
        texts = [train[i] for i in chosen if fits(train[i])][:sentences]
        eval_texts = [s for document in documents["val"] for s in document if fits(s)][:eval_sentences]
        return StudyCorpus(f"enwiki train, a seeded sample of {len(texts):,} sentences", texts, None, eval_texts, None)
    corpus = loaded.record.corpus or "multi30k"
    splits = CORPORA[corpus].read(data_dir)
    train_pairs = [(s, t) for s, t in splits["train"] if fits(t)][:sentences]
    val_pairs = [(s, t) for s, t in splits["val"] if fits(t)][:eval_sentences]
    return StudyCorpus(
        f"{corpus} train targets, the first {len(train_pairs):,} pairs",
        [t for _, t in train_pairs],
        [s for s, _ in train_pairs],
        [t for _, t in val_pairs],
        [s for s, _ in val_pairs],
    )


def _fits_window(loaded: LoadedModel):
    """Whether a text's whole stream fits the model's window (one token more
    than a translation decoder reads, the final EOS, which costs little)."""
    limit = loaded.config.max_positions

    def fits(text: str) -> bool:
        return bool(text.strip()) and len(prefix_stream(loaded, text)) <= limit

    return fits


def mine_corpus(
    loaded: LoadedModel, corpus: StudyCorpus, run_dir: Path, batch_size: int, top_k: int
) -> tuple[MiningState, float]:
    """Mine (resuming from run_dir's state); returns the state and this session's sentences per second."""
    state_path = run_dir / STATE_FILE
    state = MiningState.load(state_path) if state_path.exists() else None
    start_sentence = state.sentences_consumed if state else 0
    bar = tqdm(desc="mining", total=len(corpus.texts), initial=start_sentence, unit="sentence")
    batches = 0
    started = time.monotonic()

    def on_batch(current: MiningState) -> None:
        nonlocal batches
        batches += 1
        bar.update(current.sentences_consumed - bar.n)
        if batches % SAVE_EVERY == 0:
            current.save(state_path)

    state = mine_triggers(loaded, corpus.texts, corpus.sources, state, batch_size, top_k, on_batch)
    state.save(state_path)
    bar.close()
    seconds = time.monotonic() - started
    return state, (state.sentences_consumed - start_sentence) / seconds if seconds > 0 else 0.0


def agreement_record(agreement: LayerAgreement) -> dict:
    ranks = agreement.ranks[agreement.ranks >= 0].double()  # [keys with triggers]
    baseline = agreement.baseline_ranks[agreement.baseline_ranks >= 0].double()
    record = {k: v for k, v in asdict(agreement).items() if k not in ("ranks", "baseline_ranks")}
    record["median_rank"] = ranks.median().item() if len(ranks) else None
    record["baseline_median_rank"] = baseline.median().item() if len(baseline) else None
    for threshold in RANK_THRESHOLDS:
        record[f"rank_below_{threshold}"] = (ranks < threshold).double().mean().item() if len(ranks) else None
        record[f"baseline_rank_below_{threshold}"] = (
            (baseline < threshold).double().mean().item() if len(baseline) else None
        )
    return record


def aggregate(loaded: LoadedModel, corpus: StudyCorpus, batch_size: int) -> list[dict]:
    """The aggregation summary per layer over the evaluation texts."""
    memories = ff_memories(loaded.model)
    tops = value_tops(memories)
    aggregations = []
    for start in tqdm(range(0, len(corpus.eval_texts), batch_size), desc="aggregation", unit="batch"):
        batch = slice(start, start + batch_size)
        sources = None if corpus.eval_sources is None else corpus.eval_sources[batch]
        trace = trace_texts(loaded, corpus.eval_texts[batch], sources, memories.capture_hooks())
        aggregations.append(ff_aggregation(trace, memories, tops=tops))
    return [asdict(summary) for summary in summarise_aggregation(aggregations)]


def study_checkpoint(
    folder: str | Path,
    data_dir: str | Path | None = None,
    device: str = "auto",
    sentences: int = 50_000,
    eval_sentences: int = 2_000,
    batch_size: int = 64,
    top_k: int = 50,
    run_dir: str | Path | None = None,
) -> tuple[Path, Path]:
    """The study of a checkpoint on its corpus (module doc); returns the two files written."""
    folder = Path(folder)
    loaded = load_checkpoint(folder, device)
    run_dir = Path(run_dir or REPO_ROOT / "runs" / "ff_study" / folder.name)
    corpus = study_corpus(loaded, resolve_data_dir(data_dir), sentences, eval_sentences)
    print(
        f"{folder.name}: mining {corpus.description}; aggregating on {len(corpus.eval_texts):,} held-out sentences",
        flush=True,
    )
    paths = run_study(loaded, folder, corpus, run_dir, batch_size, top_k)
    for record in json.loads(paths[1].read_text())["agreement"]:
        print(
            f"{record['layer']}: agreement {record['agreement']:.3f} (random keys {record['baseline_agreement']:.3f}), "
            f"median rank {record['median_rank']}",
            flush=True,
        )
    return paths


def run_study(
    loaded: LoadedModel, folder: Path, corpus: StudyCorpus, run_dir: Path, batch_size: int = 64, top_k: int = 50
) -> tuple[Path, Path]:
    """Mine `corpus`, store the compact triggers and the analysis in `folder`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with torch.inference_mode():
        state, rate = mine_corpus(loaded, corpus, run_dir, batch_size, top_k)
        compact = compact_triggers(state, loaded, corpus.texts)
        triggers_path = folder / TRIGGERS_FILE
        write_triggers(compact, triggers_path)
        memories = ff_memories(loaded.model)
        agreements = key_value_agreement(
            {layer: value_logits(memories, layer) for layer in memories.layers}, TriggerStore(compact).trigger_tokens()
        )
        started = time.monotonic()
        aggregation = aggregate(loaded, corpus, batch_size)
    analysis = {
        "model": folder.name,
        "mining": {
            "corpus": corpus.description,
            "sentences": state.sentences_consumed,
            "top_k": top_k,
            "sentences_per_second": round(rate, 1),
        },
        "agreement": [agreement_record(a) for a in agreements],
        "aggregation": {
            "sentences": len(corpus.eval_texts),
            "seconds": round(time.monotonic() - started, 1),
            "layers": aggregation,
        },
    }
    analysis_path = folder / ANALYSIS_FILE
    analysis_path.write_text(json.dumps(analysis, indent=1) + "\n")
    return triggers_path, analysis_path
