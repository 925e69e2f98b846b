"""Working-memory decoder (paper 004): generation and the teacher-forced
training step of Algorithm 1.

Generation (`wm_generate`), through the shared decoding loop
(`inference.core.decoding.generate`). From BOS, every step runs the decoder
(KV cache) on the last element and decides the next one:

- type: argmax of the type head; forced to target when the example already
  holds `memory_size` memory tokens (the inference memory size: trained M,
  or a lesion's 0 .. 2M);
- memory type: a token nucleus-sampled (p = config.top_p) from the token
  logits with pad/BOS/EOS excluded, using one seeded torch.Generator per
  call and exactly one uniform draw per example per step, so a fixed seed
  and batch reproduce the same memory;
- target type: the greedy token.
An example stops at the first target-type EOS (or when max_new_tokens
elements have been generated). Every step's decision passes through the
hook point `decoder.wm.choice` (columns in `CHOICE_COLUMNS`), and the loop
reads the type and token back from it, so hooks may edit decisions; the
memory cap and finished examples are enforced again after the hooks, and a
memory step that a hook turns into a target step writes the target token
(greedy, or gold in training) instead of the sampled one. What was finally
written passes `decoder.wm.written`.

Training (`wm_training_forward`, Algorithm 1). The interleaved stream is
built step by step without gradients: the type head chooses the type
(forced to target once M memory tokens exist), a memory step appends a
nucleus-sampled token, a target step appends the gold next target token;
an example is complete once its gold target (ending in EOS) is in. Then one
forward pass with gradients over the built stream gives

- target loss: token cross-entropy only at positions whose next element is
  a target token (memory predictions get no loss, as in the paper);
- type loss: cross-entropy of the type head against self-supervised labels
  (`type_labels`), the decision this module makes for a head that the
  released code leaves without a loss:

  At position s, p_s = the model's (detached) probability of the gold next
  target token. Positions where memory is not yet full are eligible. The
  eligible positions with p_s < threshold are candidates, their number is
  clamped to [1, M - 1] (to [1, 1] when M = 1) and to the number of
  eligible positions, and that many eligible positions with the lowest p_s
  are labelled "memory"; every other position is labelled "target".

  Justification: the model is taught to stop and write memory before the
  target tokens it finds hardest, which is where extra computation in the
  stream can help. The labels come from the token model, never from the
  type head itself, and their count per sequence lies in [1, M - 1] by
  construction, so the head cannot collapse to always 0 or always M memory
  tokens by fitting its own choices. total loss = target_loss +
  type_loss_weight x type_loss.

Lesions are `inference.core.interventions.Interventions` (memory_size as
the inference memory cap 0 .. 2 x trained, mask_memory, force_memory, and
the shared scale), applied by `applied_interventions`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from inference.core.applied_interventions import applied_interventions
from inference.core.decoding import Choice, generate
from inference.core.interventions import Interventions
from inference.core.losses import BatchShare
from inference.core.memory_decisions import CHOICE_COLUMN, MEMORY_TYPE, TARGET_TYPE
from inference.core.refusals import InputRefused
from inference.families.working_memory.model import (
    WorkingMemoryTransformer,
)

COL = CHOICE_COLUMN


# ---------------------------------------------------------------- one decision


def nucleus_sample(
    logits: torch.Tensor,  # [b, vocab]
    top_p: float,
    uniforms: torch.Tensor,  # [b] draws from U[0, 1), one per row
    banned: tuple[int, ...] = (),
) -> tuple[torch.Tensor, torch.Tensor]:  # tokens [b], nucleus sizes [b]
    """Sample from the smallest set of most likely tokens whose mass reaches
    top_p (Holtzman et al.) by inverse CDF on the given uniform draws."""
    logits = logits.float().clone()
    if banned:
        logits[:, list(banned)] = float("-inf")
    probs = logits.softmax(dim=-1)
    sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)  # [b, vocab]
    keep = (sorted_p.cumsum(dim=-1) - sorted_p) < top_p  # the first token is always kept
    sizes = keep.sum(dim=-1)  # [b]
    kept = sorted_p * keep
    u = uniforms * kept.sum(dim=-1)  # [b]
    index = (kept.cumsum(dim=-1) < u[:, None]).sum(dim=-1)
    index = torch.minimum(index, sizes - 1)
    return order.gather(-1, index[:, None]).squeeze(1), sizes


def _choose(
    model: WorkingMemoryTransformer,
    token_logits: torch.Tensor,  # [b, vocab] at the last position
    type_logits: torch.Tensor,  # [b, 2]
    memory_count: torch.Tensor,  # [b] memory tokens written so far
    memory_size: int,
    active: torch.Tensor,  # [b] bool, not finished
    uniforms: torch.Tensor,  # [b] the step's one uniform draw per example
    gold: torch.Tensor | None = None,  # [b] teacher-forced target tokens (training)
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # types [b], tokens [b], the step's final record [b, 7]
    c = model.config
    p = type_logits.float().softmax(dim=-1)  # [b, 2]
    wants_memory = p[:, MEMORY_TYPE] > p[:, TARGET_TYPE]
    room = memory_count < memory_size
    is_memory = wants_memory & room & active
    # One draw per example per step whatever its type (the writer's), so a seed fixes every
    # memory token; the vocabulary sort runs only for the rows writing memory.
    token = gold.clone() if gold is not None else token_logits.argmax(dim=-1)  # [b]
    sizes = torch.zeros_like(token)
    rows = is_memory.nonzero().flatten()
    if len(rows):
        banned = (c.pad_id, c.bos_id, c.eos_id)
        token[rows], sizes[rows] = nucleus_sample(token_logits[rows], c.top_p, uniforms[rows], banned)
    token = token.masked_fill(~active, c.pad_id)
    record = torch.stack(
        [
            p[:, MEMORY_TYPE],
            p[:, TARGET_TYPE],
            (~is_memory).float(),
            token.float(),
            sizes.float(),
            (wants_memory & ~room & active).float(),
            active.float(),
        ],
        dim=-1,
    )  # [b, 7]
    record = model.decoder.wm.choice(record)
    types = record[:, COL["type"]].round().long().clamp(0, 1)
    tokens = record[:, COL["token"]].round().long()
    types = torch.where(active & room, types, TARGET_TYPE)  # the cap and finished rows hold whatever hooks did
    # A memory step that a hook turned into a target step writes the target token, not the sampled one.
    target = gold if gold is not None else token_logits.argmax(dim=-1)  # [b]
    tokens = torch.where(is_memory & (types == TARGET_TYPE), target, tokens)
    if gold is not None:
        tokens = torch.where(types == TARGET_TYPE, gold, tokens)
    tokens = tokens.masked_fill(~active, c.pad_id)
    record = record.clone()
    record[:, COL["type"]], record[:, COL["token"]] = (
        types.float(),
        tokens.float(),
    )  # what was written, after hooks and cap
    record[:, COL["nucleus_size"]] *= types == MEMORY_TYPE  # a target token was not sampled
    return types, tokens, model.decoder.wm.written(record)


# ---------------------------------------------------------------- generation


@dataclass
class WMExample:
    ids: list[int]  # generated interleaved stream (BOS excluded), up to and including the target EOS
    types: list[int]  # 0 memory, 1 target, per element of ids
    translation: list[int]  # target-type tokens, final EOS excluded
    memory: list[int]  # memory-type tokens in order


@dataclass
class WMGeneration:
    ids: torch.Tensor  # [b, 1 + steps] stream with BOS, pad after an example finished
    types: torch.Tensor  # [b, 1 + steps]
    key_mask: torch.Tensor  # [b, 1 + steps] True for real elements
    examples: list[WMExample]
    memory_size: int  # the inference memory cap used
    choices: torch.Tensor  # [b, steps, 7] every step's decision as written (CHOICE_COLUMNS), on the CPU


def _examples(ids: torch.Tensor, types: torch.Tensor, key_mask: torch.Tensor, eos_id: int) -> list[WMExample]:
    examples = []
    for row, row_types, row_real in zip(ids[:, 1:].tolist(), types[:, 1:].tolist(), key_mask[:, 1:].tolist()):
        pairs = [(i, k) for i, k, real in zip(row, row_types, row_real) if real]
        translation = [i for i, k in pairs if k == TARGET_TYPE]
        if translation and translation[-1] == eos_id and pairs[-1] == (eos_id, TARGET_TYPE):
            translation = translation[:-1]
        examples.append(
            WMExample(
                ids=[i for i, _ in pairs],
                types=[k for _, k in pairs],
                translation=translation,
                memory=[i for i, k in pairs if k == MEMORY_TYPE],
            )
        )
    return examples


class _Writer:
    """The working-memory decoder's side of the shared loop: its step runs the
    decoder on the stream so far (tokens and their types), its chooser picks
    each element's type and token (`_choose`) and keeps the stream's types.

    With `gold` [b, w] and `lengths` [b] (training, Algorithm 1) a target step
    writes the next gold token, and an example is complete once all of its
    gold tokens are in; otherwise at its first target-type EOS."""

    def __init__(
        self,
        model: WorkingMemoryTransformer,
        src_ids: torch.Tensor,  # [b, n]
        memory_size: int,
        generator: torch.Generator,
        use_cache: bool = True,
        gold: torch.Tensor | None = None,  # [b, w] gold target ids, one spare column
        lengths: torch.Tensor | None = None,  # [b] gold tokens per example
        share: BatchShare | None = None,  # where the batch is a part of a data-parallel step's global batch
    ):
        b, device = src_ids.shape[0], src_ids.device
        self.model, self.memory_size, self.generator, self.share = model, memory_size, generator, share
        self.gold, self.lengths = gold, lengths
        self.appended = torch.zeros(b, dtype=torch.long, device=device)  # [b] gold tokens written (training)
        self.encoded = model.encode(src_ids)
        self.cache = model.new_cache() if use_cache else None
        self.types = torch.full((b, 1), TARGET_TYPE, dtype=torch.long, device=device)  # [b, 1 + steps]
        self.key_mask = torch.ones(b, 1, dtype=torch.bool, device=device)  # [b, 1 + steps] real elements
        self.memory_count = torch.zeros(b, dtype=torch.long, device=device)  # [b] memory tokens written
        self.choices: list[torch.Tensor] = []  # per step: [b, 7] the decision as written

    def step(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # [b, t] -> [b, vocab], [b, 2]
        if self.cache is not None:
            token_logits, type_logits = self.model.decode(ids[:, -1:], self.types[:, -1:], self.encoded, self.cache)
        else:
            token_logits, type_logits = self.model.decode(ids, self.types, self.encoded)
        return token_logits[:, -1], type_logits[:, -1]

    def uniforms(self, b: int) -> torch.Tensor:  # [b]
        """The step's one uniform draw per example; where the batch is a part of a global batch, the draw of each
        of its rows in a draw over the whole global batch, so that every example draws what it would there."""
        if self.share is None:
            return torch.rand(b, generator=self.generator, device=self.generator.device)
        whole = torch.rand(self.share.size, generator=self.generator, device=self.generator.device)  # [global b]
        return whole[list(self.share.rows)]

    def choose(self, logits: tuple[torch.Tensor, torch.Tensor], finished: torch.Tensor) -> Choice:
        token_logits, type_logits = logits
        active = ~finished  # [b]
        next_gold = None
        if self.gold is not None:
            rows = torch.arange(self.gold.shape[0], device=self.gold.device)
            next_gold = self.gold[rows, self.appended.clamp(max=self.gold.shape[1] - 1)]  # [b]
        next_type, next_token, record = _choose(
            self.model,
            token_logits,
            type_logits,
            self.memory_count,
            self.memory_size,
            active,
            self.uniforms(active.shape[0]),
            next_gold,
        )
        self.choices.append(record.cpu())
        self.types = torch.cat([self.types, next_type[:, None]], dim=1)
        self.key_mask = torch.cat([self.key_mask, active[:, None]], dim=1)
        self.memory_count += (next_type == MEMORY_TYPE) & active
        is_target = active & (next_type == TARGET_TYPE)
        if self.gold is None:
            return Choice(next_token, is_target & (next_token == self.model.config.eos_id))
        self.appended += is_target
        if self.lengths is None:
            raise TypeError("a writer given gold targets needs their lengths")
        return Choice(next_token, active & (self.appended >= self.lengths))


@torch.no_grad()
def wm_generate(
    model: nn.Module,
    src_ids: torch.Tensor,  # [b, n]
    interventions: Interventions | None = None,
    seed: int = 0,
    max_new_tokens: int = 128,
    use_cache: bool = True,
) -> WMGeneration:
    """Generate memory and translation together (see the module doc); `model`: a working-memory model
    (TypeError otherwise)."""
    if not isinstance(model, WorkingMemoryTransformer):
        raise TypeError(f"a {type(model).__name__} writes no working memory")
    with applied_interventions(model, interventions) as memory_size:
        return generate_with_memory(model, src_ids, memory_size, seed, max_new_tokens, use_cache)


def generate_with_memory(
    model: WorkingMemoryTransformer,
    src_ids: torch.Tensor,  # [b, n]
    memory_size: int,
    seed: int = 0,
    max_new_tokens: int = 128,
    use_cache: bool = True,
) -> WMGeneration:
    """`wm_generate` inside interventions the caller has applied already."""
    c = model.config
    generator = torch.Generator(device=src_ids.device).manual_seed(seed)
    writer = _Writer(model, src_ids, memory_size, generator, use_cache)
    start = torch.full((src_ids.shape[0], 1), c.bos_id, dtype=torch.long, device=src_ids.device)  # [b, 1]
    ids = generate(writer.step, writer.choose, start, min(max_new_tokens, c.max_positions - 1))  # BOS takes position 0
    examples = _examples(ids.cpu(), writer.types.cpu(), writer.key_mask.cpu(), c.eos_id)
    return WMGeneration(ids, writer.types, writer.key_mask, examples, memory_size, torch.stack(writer.choices, dim=1))


# ---------------------------------------------------------------- training


@dataclass
class WMTrainingOutput:
    loss: torch.Tensor  # scalar: target_loss + type_loss_weight * type_loss
    target_loss: torch.Tensor  # scalar, mean over target-token predictions
    type_loss: torch.Tensor  # scalar, mean over labelled positions
    ids: torch.Tensor  # [b, L] built stream with BOS, pad after an example is complete
    types: torch.Tensor  # [b, L]
    key_mask: torch.Tensor  # [b, L] real elements
    type_labels: torch.Tensor  # [b, L] label for the element after each position; -100 where none
    gold_probs: torch.Tensor  # [b, L] detached probability of the gold next target token; nan where none


def type_labels(
    gold_probs: torch.Tensor,  # [L] probability of the gold next target token at each position
    eligible: torch.Tensor,  # [L] bool: memory not full before the next element, and a next element exists
    valid: torch.Tensor,  # [L] bool: a next element exists (the position gets a label)
    memory_size: int,
    threshold: float,
) -> torch.Tensor:  # [L] 0 memory, 1 target, -100 unlabelled
    """The type head's self-supervised labels for one sequence (module doc)."""
    labels = torch.full_like(gold_probs, -100, dtype=torch.long)
    labels[valid] = TARGET_TYPE
    n_eligible = int(eligible.sum())
    if n_eligible == 0:
        return labels
    below = int((eligible & (gold_probs < threshold)).sum())
    k = min(max(below, 1), max(memory_size - 1, 1), n_eligible)
    scores = torch.where(eligible, gold_probs, torch.full_like(gold_probs, float("inf")))
    hardest = scores.sort(stable=True).indices[:k]
    labels[hardest] = MEMORY_TYPE
    return labels


def wm_training_forward(
    model: WorkingMemoryTransformer,
    src_ids: torch.Tensor,  # [b, n]
    targets: list[list[int]],  # gold target ids per example, without BOS, ending in EOS
    seed: int | torch.Generator = 0,
    type_threshold: float = 0.5,
    type_loss_weight: float = 0.5,
    memory_size: int | None = None,  # M for the build; default the config's
    label_smoothing: float = 0.0,  # of the target-token loss
    share: BatchShare | None = None,  # where the batch is a part of a data-parallel step's global batch
) -> WMTrainingOutput:
    """Algorithm 1: build the interleaved stream without gradients, then one
    forward pass with gradients over it (see the module doc for the losses)."""
    c = model.config
    device = src_ids.device
    b = src_ids.shape[0]
    m = c.memory_size if memory_size is None else memory_size
    if len(targets) != b or any(not t for t in targets):
        raise InputRefused("need one non-empty target per source")
    longest = max(len(t) for t in targets) + m + 1
    if longest > c.max_positions:
        raise InputRefused(f"a built stream may have {longest} elements; max_positions is {c.max_positions}")
    lengths = torch.tensor([len(t) for t in targets], device=device)  # [b]
    gold = torch.full(
        (b, max(len(t) for t in targets) + 1), c.pad_id, dtype=torch.long, device=device
    )  # one spare column
    for row, target in enumerate(targets):
        gold[row, : len(target)] = torch.tensor(target, dtype=torch.long)
    generator = seed if isinstance(seed, torch.Generator) else torch.Generator(device=device).manual_seed(seed)

    with torch.no_grad():  # build the stream through the shared loop; every example ends within longest - 1 steps
        writer = _Writer(model, src_ids, m, generator, gold=gold, lengths=lengths, share=share)
        start = torch.full((b, 1), c.bos_id, dtype=torch.long, device=device)  # [b, 1]
        ids = generate(writer.step, writer.choose, start, longest - 1)  # [b, L]
        types, key_mask = writer.types, writer.key_mask
    rows = torch.arange(b, device=device)

    token_logits, type_logits = model(src_ids, ids, types, key_mask)  # with gradients
    pred, type_pred = token_logits[:, :-1], type_logits[:, :-1]  # position s predicts element s + 1
    next_ids, next_types, next_real = ids[:, 1:], types[:, 1:], key_mask[:, 1:]
    is_target = next_real & (next_types == TARGET_TYPE)  # [b, L-1]
    target_loss = F.cross_entropy(pred[is_target], next_ids[is_target], label_smoothing=label_smoothing)

    # Self-supervised type labels (module doc).
    targets_in = ((types == TARGET_TYPE) & key_mask).cumsum(
        dim=1
    ) - 1  # [b, L] gold tokens in the stream up to s (BOS excluded)
    memory_in = ((types == MEMORY_TYPE) & key_mask).cumsum(dim=1)  # [b, L]
    gold_index = targets_in[:, :-1].clamp(max=gold.shape[1] - 1)
    probs = (
        pred.detach().float().softmax(dim=-1).gather(-1, gold[rows[:, None], gold_index][..., None]).squeeze(-1)
    )  # [b, L-1]
    gold_probs = torch.where(next_real, probs, torch.full_like(probs, float("nan")))
    eligible = next_real & (memory_in[:, :-1] < m)
    labels = torch.stack([type_labels(gold_probs[r], eligible[r], next_real[r], m, type_threshold) for r in range(b)])
    labelled = labels != -100
    type_loss = F.cross_entropy(type_pred[labelled], labels[labelled])

    def pad_column(x: torch.Tensor, value: float) -> torch.Tensor:  # [b, L-1] -> [b, L]
        return torch.cat([x, torch.full_like(x[:, :1], value)], dim=1)

    return WMTrainingOutput(
        loss=target_loss + type_loss_weight * type_loss,
        target_loss=target_loss,
        type_loss=type_loss,
        ids=ids,
        types=types,
        key_mask=key_mask,
        type_labels=pad_column(labels, -100),
        gold_probs=pad_column(gold_probs, float("nan")),
    )


def stream_budget(model: WorkingMemoryTransformer, max_new_tokens: int) -> int:
    """Elements a stream may hold: the translation's budget plus the largest memory."""
    return max_new_tokens + model.config.max_memory_size


def generate_batches(
    model: nn.Module,
    batches: Iterable[tuple[list[int], torch.Tensor]],
    count: int,
    max_new_tokens: int,
    interventions: Interventions | None = None,
    on_batch: Callable[[int], None] | None = None,
    seed: int = 0,
) -> list[WMExample]:
    """Memory and translation of `count` sources given as (rows, padded source ids [b, n]) batches, in row order;
    batch i samples with seed + i. `model`: a working-memory model (TypeError otherwise)."""
    if not isinstance(model, WorkingMemoryTransformer):
        raise TypeError(f"a {type(model).__name__} writes no working memory")
    examples: dict[int, WMExample] = {}  # row -> its example
    for i, (rows, src_ids) in enumerate(batches):
        budget = stream_budget(model, max_new_tokens)
        generation = wm_generate(model, src_ids, interventions, seed=seed + i, max_new_tokens=budget)
        for row, example in zip(rows, generation.examples):
            examples[row] = example
        if on_batch:
            on_batch(len(rows))
    return [examples[row] for row in range(count)]
