"""Translation quality: greedy decoding (inference.decoding, the code the app
runs), BLEU and chrF with sacrebleu, and the memory-size lesion sweep."""

from __future__ import annotations

from collections.abc import Sequence

import sacrebleu

from inference.decoding import greedy_decode, pad_batch, strip_after_eos
from inference.interventions import Interventions
from inference.models.memory_transformer import MemoryTransformer
from inference.tokenizer import TextTokenizer
from training.data import Pair

EVAL_BATCH_SIZE = 128
MAX_NEW_TOKENS = 100  # Multi30k captions are far shorter; this only bounds a model that never says EOS
LESION_MEMORY_SIZES = (0, 2, 5, 10, 20, 30)  # inference memory sizes of the paper's Table 2


def translate(
    model: MemoryTransformer,
    tokenizer: TextTokenizer,
    sources: Sequence[str],
    batch_size: int = EVAL_BATCH_SIZE,
    interventions: Interventions | None = None,
) -> list[str]:
    """Greedy translations of `sources`, in their order."""
    model.eval()
    device = next(model.parameters()).device
    ids = tokenizer.encode_sources(list(sources))
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths per batch: less padding
    translations = [""] * len(ids)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        src_ids = pad_batch([ids[i] for i in rows], tokenizer.pad_id, device)  # [b, n]
        generated = greedy_decode(model, src_ids, interventions, MAX_NEW_TOKENS)  # [b, steps]
        for row, tokens in zip(rows, strip_after_eos(generated, tokenizer.eos_id)):
            translations[row] = tokenizer.decode(tokens)
    return translations


def bleu_and_chrf(model: MemoryTransformer, tokenizer: TextTokenizer, pairs: list[Pair], batch_size: int = EVAL_BATCH_SIZE, interventions: Interventions | None = None) -> tuple[float, float]:
    """Corpus BLEU and chrF of greedy translations against the references."""
    sources, references = zip(*pairs)
    hypotheses = translate(model, tokenizer, sources, batch_size, interventions)
    return sacrebleu.corpus_bleu(hypotheses, [list(references)]).score, sacrebleu.corpus_chrf(hypotheses, [list(references)]).score


def score_splits(model: MemoryTransformer, tokenizer: TextTokenizer, splits: dict[str, list[Pair]], batch_size: int = EVAL_BATCH_SIZE) -> dict:
    """{"bleu": {split: ..}, "chrf": {split: ..}}, as metrics.json stores them."""
    scores = {split: bleu_and_chrf(model, tokenizer, pairs, batch_size) for split, pairs in splits.items()}
    return {"bleu": {split: bleu for split, (bleu, _) in scores.items()}, "chrf": {split: chrf for split, (_, chrf) in scores.items()}}


def lesion_sweep(model: MemoryTransformer, tokenizer: TextTokenizer, pairs: list[Pair], memory_sizes: Sequence[int], batch_size: int = EVAL_BATCH_SIZE) -> dict:
    """{"memory_size": [...], "bleu": [...]}: BLEU with the model run at each
    inference memory size, through the same Interventions the app applies.
    Sizes above 3x the trained size are skipped: the model allows no more."""
    sizes = [k for k in memory_sizes if k <= model.config.max_memory_size]
    bleu = [bleu_and_chrf(model, tokenizer, pairs, batch_size, Interventions(memory_size=k))[0] for k in sizes]
    return {"memory_size": sizes, "bleu": bleu}


def lesion_table(model: MemoryTransformer, tokenizer: TextTokenizer, pairs: list[Pair], batch_size: int = EVAL_BATCH_SIZE) -> dict:
    """The lesion sweep stored in metrics.json: the paper's sizes plus the
    trained size, so the table always shows the unlesioned model too."""
    sizes = sorted(set(LESION_MEMORY_SIZES) | {model.config.memory_size})
    return lesion_sweep(model, tokenizer, pairs, sizes, batch_size)
