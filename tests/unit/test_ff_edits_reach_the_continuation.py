"""FF key edits reach the language model's greedy continuation, not only its teacher-forced pass.

The language-model family continues a text greedily, then records one teacher-forced pass over the text and the
continuation; an intervention must act on both. These tests trace the shipped language model with FF keys scaled
to 0 and check the continuation (`trace.outputs`, `trace.output_ids`) against values observed once and hard-coded
here, and against an independent greedy loop that zeroes the keys with a plain torch forward hook on the
`layers.{i}.ff.keys` modules (no MemLens intervention code involved).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from inference.core.checkpoint import load_checkpoint
from inference.core.family import LoadedModel
from inference.core.interventions import Interventions, scale_ff_keys
from inference.core.places import REPO_ROOT
from inference.core.tracing import run_with_trace

CHECKPOINT = REPO_ROOT / "checkpoints" / "language_model"
TEXT = "He was elected to the"
TEXT_IDS = [2799, 2672, 4232, 2654, 2625]  # He, was, elected, to, the
NEW_TOKENS = 6

# Observed on the shipped checkpoint (greedy, 6 new tokens).
PLAIN = "United States presidential election of the"
PLAIN_IDS = [3279, 3832, 7668, 3569, 2643, 2625]
# Every key of every FF layer zeroed: the model repeats the last token.
ALL_ZEROED = "the the the the the the"
ALL_ZEROED_IDS = [2625] * NEW_TOKENS
# Key 662 of layer 0 alone zeroed (found by searching every key of every layer on this text): the first token
# turns from "United" (3279) to "first" (2867), and the rest of the continuation follows it.
ONE_LAYER, ONE_KEY = "layers.0.ff", 662
ONE_ZEROED = "first-EEEE"
ONE_ZEROED_IDS = [2867, 16, 38, 38, 38, 38]  # first, -, E, E, E, E


@pytest.fixture(scope="module")
def lm() -> LoadedModel:
    if not (CHECKPOINT / "model.safetensors").exists():
        pytest.skip(f"the shipped language model is not at {CHECKPOINT}")
    return load_checkpoint(CHECKPOINT, device="cpu")


def ff_layers(lm: LoadedModel) -> list[str]:
    return lm.family.ff_memories(lm.model).layers


@contextmanager
def keys_zeroed(lm: LoadedModel, keys: dict[str, list[int] | None]) -> Iterator[None]:
    """Plain torch forward hooks on `{layer}.keys` that zero the given keys (None: all of them)."""

    def zeroing(index: list[int] | None):
        def hook(module: torch.nn.Module, inputs: tuple, output: torch.Tensor) -> torch.Tensor:
            output = output.clone()
            output[..., slice(None) if index is None else index] = 0.0
            return output

        return hook

    handles = [
        lm.model.get_submodule(f"{layer}.keys").register_forward_hook(zeroing(index)) for layer, index in keys.items()
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def hooked_greedy(lm: LoadedModel, keys: dict[str, list[int] | None], steps: int) -> list[int]:
    """Greedy argmax, step by step, over [EOS] + the text's ids, with the keys zeroed by hooks."""
    eos = lm.config.eos_id
    ids = [eos, *lm.tokenizer.encode(TEXT)]
    assert ids[1:] == TEXT_IDS
    new: list[int] = []
    with keys_zeroed(lm, keys):
        for _ in range(steps):
            token = int(lm.model(torch.tensor([ids + new]))[0, -1].argmax())
            if token == eos:
                break
            new.append(token)
    return new


def continuation_ids(trace) -> list[int]:
    ids = trace.output_ids[0]
    assert ids[: len(TEXT_IDS)] == TEXT_IDS
    return ids[len(TEXT_IDS) :]


def assert_greedy_under_its_own_logits(trace, continuation: list[int]) -> None:
    """The teacher-forced logits (same interventions) choose each continuation token: the continuation was decoded
    under the edit, not without it. Position 0 is [EOS], so the prediction of new token j sits at len(text) + j."""
    chosen = trace.logits[0].argmax(-1).tolist()
    assert [chosen[len(TEXT_IDS) + j] for j in range(len(continuation))] == continuation


def test_the_plain_continuation(lm):
    trace = run_with_trace(lm, TEXT, names=["logits"], max_new_tokens=NEW_TOKENS)
    assert trace.outputs[0] == PLAIN
    assert continuation_ids(trace) == PLAIN_IDS == hooked_greedy(lm, {}, NEW_TOKENS)
    assert_greedy_under_its_own_logits(trace, PLAIN_IDS)


def test_zeroing_every_key_of_every_ff_layer_changes_the_continuation(lm):
    layers = ff_layers(lm)
    assert layers == [f"layers.{i}.ff" for i in range(6)]
    every_key = tuple(range(lm.config.d_ff))
    edit = Interventions.of(*[scale_ff_keys(layer, every_key, 0.0) for layer in layers])
    trace = run_with_trace(
        lm, TEXT, names=["logits", "layers.0.ff.keys"], interventions=edit, max_new_tokens=NEW_TOKENS
    )

    assert trace.outputs[0] == ALL_ZEROED
    assert lm.tokenizer.decode(ALL_ZEROED_IDS) == ALL_ZEROED
    continuation = continuation_ids(trace)
    assert continuation == ALL_ZEROED_IDS
    independent = hooked_greedy(lm, dict.fromkeys(layers), NEW_TOKENS)
    for j, (traced, hooked) in enumerate(zip(continuation, independent, strict=True)):
        assert traced == hooked, f"token {j}: traced {traced}, hooked greedy {hooked}"
    assert_greedy_under_its_own_logits(trace, continuation)
    keys = trace.captures["layers.0.ff.keys"].calls[0].tensor
    assert keys.shape[-1] == lm.config.d_ff and not keys.any()


def test_zeroing_one_key_changes_the_first_generated_token(lm):
    edit = Interventions.of(scale_ff_keys(ONE_LAYER, (ONE_KEY,), 0.0))
    trace = run_with_trace(lm, TEXT, names=["logits"], interventions=edit, max_new_tokens=NEW_TOKENS)
    continuation = continuation_ids(trace)
    independent = hooked_greedy(lm, {ONE_LAYER: [ONE_KEY]}, NEW_TOKENS)

    assert continuation[0] == independent[0] == ONE_ZEROED_IDS[0] != PLAIN_IDS[0]
    assert lm.tokenizer.decode([ONE_ZEROED_IDS[0]]) == "first"
    assert continuation == independent == ONE_ZEROED_IDS
    assert trace.outputs[0] == ONE_ZEROED
    assert_greedy_under_its_own_logits(trace, continuation)
