"""Perplexity of the language model on a long stream of text.

Scoring: the stream is read in windows of `context` tokens (the model's
max_positions) that advance by `stride` (default context / 2); each target
token is scored once, in the first window that reaches it, so every token
after the first window sees at least context - stride tokens of context
(the usual strided evaluation; non-overlapping windows would leave the
first tokens of each window almost without context).

Not scored: EOS targets (the document separators: not text) and UNK
targets (WikiText's `<unk>` words, and characters outside the BPE alphabet);
they still serve as context. NLL is in nats.

- token-level perplexity = exp(NLL / scored BPE tokens): depends on our
  tokenizer, since every word costs one or more tokens;
- word-level perplexity = exp(NLL / words), with words counted on the
  reference tokenization (WikiText: its own tokens, e.g. "," and "@-@" are
  words, line ends are not, `<unk>` words are left out as their targets
  are; enwiki validation: whitespace-separated words). The numerator is
  the same total, so this measures the cost of the same text per word,
  comparable between models with different tokenizers (not with published
  WikiText numbers of closed-vocabulary models, which also predict `<unk>`
  and line ends).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from inference.core.capabilities import config_of
from inference.core.tokenizer import TextTokenizer

EVAL_BATCH_SIZE = 8  # windows per forward pass; bounds the [b, context, vocab] logits

# ids [b, t] -> logits [b, t, vocab]
LogitsFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class StreamScore:
    nll: float  # summed negative log-likelihood of the scored targets, in nats
    tokens: int  # scored targets
    unscored: int  # targets left out (EOS, UNK)
    target_nll: torch.Tensor  # [n] float64: each stream position's NLL as a target, 0 where not scored
    scored: torch.Tensor  # [n] bool: the position was scored as a target

    @property
    def token_perplexity(self) -> float:
        return perplexity(self.nll, self.tokens)


def perplexity(nll: float, count: int) -> float:
    """exp(mean NLL): `nll` summed over `count` units (tokens or words)."""
    return math.exp(nll / count)


def scoring_windows(n_tokens: int, context: int, stride: int) -> list[tuple[int, int]]:
    """(start, first) per window over a stream of n_tokens: the window's
    inputs are stream[start : start + context] and it scores the targets
    (stream positions) first .. start + context, each target of 1 ..
    n_tokens - 1 exactly once."""
    if not 0 < stride <= context:
        raise ValueError(f"stride must lie in 1..context ({context}), got {stride}")
    windows, first = [], 1
    for start in range(0, max(n_tokens - 1, 0), stride):
        end = min(start + context, n_tokens - 1)  # the last target this window scores
        windows.append((start, first))
        first = end + 1
        if end == n_tokens - 1:
            break
    return windows


@torch.no_grad()
def score_stream(
    logits_fn: LogitsFn,
    stream: torch.Tensor,  # [n] token ids
    context: int,
    unscored_ids: tuple[int, ...],
    pad_id: int,
    stride: int | None = None,
    batch_size: int = EVAL_BATCH_SIZE,
    device: torch.device | str = "cpu",
    desc: str = "scoring",
) -> StreamScore:
    """Summed NLL of every target of `stream` except `unscored_ids` (module
    doc); a progress bar named `desc` counts the windows scored."""
    stream = stream.long()
    windows = scoring_windows(len(stream), context, stride or max(context // 2, 1))
    nll, tokens, unscored = 0.0, 0, 0
    target_nll = torch.zeros(len(stream), dtype=torch.float64)  # [n]
    scored_targets = torch.zeros(len(stream), dtype=torch.bool)  # [n]
    bar = tqdm(desc=desc, total=len(windows), unit="window")
    for i in range(0, len(windows), batch_size):
        chunk = windows[i : i + batch_size]
        bar.update(len(chunk))
        ids = torch.full(
            (len(chunk), context), pad_id, dtype=torch.long
        )  # [b, context]; a short last window is padded after
        scored = torch.zeros(len(chunk), context, dtype=torch.bool)  # [b, context] positions whose target counts
        targets = torch.full((len(chunk), context), pad_id, dtype=torch.long)
        for row, (start, first) in enumerate(chunk):
            end = min(start + context, len(stream) - 1)
            ids[row, : end - start] = stream[start:end]
            targets[row, : end - start] = stream[start + 1 : end + 1]
            scored[row, first - start - 1 : end - start] = True
        wanted = scored & ~torch.isin(targets, torch.tensor(unscored_ids))
        unscored += int(scored.sum() - wanted.sum())
        log_probs = F.log_softmax(logits_fn(ids.to(device)).float(), dim=-1)  # [b, context, vocab]
        target_log_probs = log_probs.gather(-1, targets.to(device).unsqueeze(-1)).squeeze(-1).cpu()  # [b, context]
        nll -= float(target_log_probs[wanted].sum())
        tokens += int(wanted.sum())
        rows, columns = wanted.nonzero(as_tuple=True)
        positions = torch.tensor([chunk[r][0] + 1 for r in rows.tolist()], dtype=torch.long) + columns  # of targets
        target_nll[positions] = -target_log_probs[rows, columns].double()
        scored_targets[positions] = True
    bar.close()
    return StreamScore(nll, tokens, unscored, target_nll, scored_targets)


def document_totals(stream: torch.Tensor, eos_id: int, score: StreamScore) -> dict[str, list]:
    """Per document of `stream` (the text between EOS separators, in order):
    its summed NLL and scored targets, for intervals over documents."""
    document = torch.cumsum(stream.long() == eos_id, 0) - 1  # [n] the document each position belongs to
    count = int(document.max()) + 1 if len(stream) else 0
    nll = torch.zeros(count, dtype=torch.float64).index_add_(0, document, score.target_nll)
    tokens = torch.zeros(count, dtype=torch.long).index_add_(0, document, score.scored.long())
    keep = tokens > 0  # documents with scored text
    return {"nll": [round(v, 3) for v in nll[keep].tolist()], "tokens": tokens[keep].tolist()}


@dataclass
class EvalText:
    stream: torch.Tensor  # [n] token ids, documents separated (and preceded) by EOS
    words: int  # words of the scored text on the reference tokenization (module doc)


def unscored_ids(tokenizer: TextTokenizer) -> tuple[int, ...]:
    """The targets not scored (module doc): EOS, and UNK where the tokenizer has one."""
    return tuple(i for i in (tokenizer.eos_id, tokenizer.unk_id) if i is not None)


def perplexity_metrics(
    model: nn.Module,
    tokenizer: TextTokenizer,
    texts: dict[str, EvalText],
    device: torch.device | str,
    context: int,
) -> dict:
    """metrics.json's perplexity records: token- and word-level per text,
    and the counts behind them (also per document, EOS separating
    them, for intervals); windows of `context` tokens (a segment model
    reads each window segment by segment, its memory fresh at the window's start)."""
    model.eval()
    stride = max(context // 2, 1)
    scores = {
        name: score_stream(
            model,
            text.stream,
            context,
            unscored_ids(tokenizer),
            config_of(model).pad_id,
            stride,
            device=device,
            desc=f"perplexity {name}",
        )
        for name, text in texts.items()
    }
    return {
        "perplexity": {name: round(score.token_perplexity, 3) for name, score in scores.items()},
        "word_perplexity": {name: round(perplexity(score.nll, texts[name].words), 3) for name, score in scores.items()},
        "perplexity_counts": {
            "context": context,
            "stride": stride,
            "splits": {
                name: {
                    "nll": round(score.nll, 3),
                    "tokens": score.tokens,
                    "words": texts[name].words,
                    "unscored": score.unscored,
                    "documents": document_totals(texts[name].stream, tokenizer.eos_id, score),
                }
                for name, score in scores.items()
            },
        },
    }
