"""Training the working-memory decoder (Algorithm 1) end to end on generated
data: config rules, the warm start from a plain Transformer, the plain
epochs, the memory epochs, and the checkpoint's lesion table."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from inference.core.checkpoint import CheckpointRegistry, load_checkpoint
from inference.core.decoding import pad_batch
from inference.core.losses import StepObjective
from inference.core.memory_decisions import TARGET_TYPE
from inference.families.working_memory.model import WorkingMemoryTransformer
from tests.conftest import make_tiny_working_memory
from training.data.translation import make_batch
from training.loop.config import ConfigError, config_from_dict
from training.loop.epochs import batch_loss
from training.loop.translation_run import run_training, warm_start

WM_MODEL = {
    "family": "working_memory",
    "d_model": 16,
    "d_ff": 32,
    "n_heads": 2,
    "n_encoder_layers": 1,
    "n_decoder_layers": 1,
    "memory_size": 2,
}
WM_SECTION = {"plain_epochs": 1, "type_threshold": 0.5, "type_loss_weight": 0.5}
DATA = {"dataset": "multi30k", "vocab_size": 60, "max_len": 24}
TRAIN = {"epochs": 2, "batch_size": 16, "warmup_steps": 20, "seed": 0, "save_every_steps": 4}


def wm_config(**changes):
    return config_from_dict(
        {"name": "tiny_wm", "model": WM_MODEL, "working_memory": WM_SECTION, "data": DATA, "train": TRAIN, **changes}
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"working_memory": None}, "needs the 'working_memory' section"),
        (
            {"model": {**WM_MODEL, "family": "memory_transformer", "variant": "transformer", "memory_size": 0}},
            "needs a model of family 'working_memory'",
        ),
        ({"model": {**WM_MODEL, "top_p": 1.5}}, "top_p"),
        (
            {"init_from": "checkpoints/transformer", "data": {"dataset": "multi30k"}},
            "takes its sizes from it: remove model.d_ff",
        ),
        ({"working_memory": {**WM_SECTION, "type_threshold": 1.0}}, "type_threshold"),
    ],
)
def test_working_memory_config_rules(changes, message):
    with pytest.raises(ConfigError, match=message):
        wm_config(**changes)


@pytest.fixture(scope="module")
def trained_wm(tmp_path_factory, synthetic_data_dir):
    root = tmp_path_factory.mktemp("wm")
    folder = run_training(wm_config(), synthetic_data_dir, root / "checkpoints" / "tiny_wm", root / "run", device="cpu")
    return root / "checkpoints", folder


def test_plain_then_memory_epochs_train_a_checkpoint_with_the_mask_lesion(trained_wm):
    root, folder = trained_wm
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["train"]["epochs"] == 2 and len(metrics["train"]["loss_curve"]) == 2
    # validation BLEU every epoch, but the plain epoch is no candidate for the checkpoint: it is not measured
    assert metrics["train"]["val_bleu"]["epoch"] == [2] and metrics["train"]["selected_epoch"] == 2
    assert metrics["lesion"]["memory_size"] == [0, 2]  # paper sizes up to 2 x trained 2
    assert 0 <= metrics["lesion"]["masked_bleu"] <= 100 and metrics["lesion"]["split"] == "test_2016_flickr"
    entry = CheckpointRegistry(root, device="cpu").entries["tiny_wm"]
    assert entry.ok, entry.error
    assert entry.config.family == "working_memory" and "1 of them without memory" in entry.record.description
    assert isinstance(load_checkpoint(folder, "cpu").model, WorkingMemoryTransformer)


def test_plain_epoch_is_the_token_loss_and_memory_epoch_adds_the_type_loss(trained_wm):
    _, folder = trained_wm
    loaded = load_checkpoint(folder, "cpu")
    model, tokenizer = loaded.model, loaded.tokenizer
    batch = make_batch([(tokenizer.encode_sources(["hund läuft"])[0], tokenizer.encode("runs dog"))] * 4, tokenizer)
    settings = wm_config().family_options
    model.eval()
    plain = batch_loss(model, batch, StepObjective(0.1, epoch=0, options=settings))
    logits, _ = model(batch.src_ids, batch.tgt_in, torch.full_like(batch.tgt_in, TARGET_TYPE))  # no memory
    by_hand = F.cross_entropy(
        logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=tokenizer.pad_id, label_smoothing=0.1
    )
    assert torch.allclose(plain, by_hand)

    def with_memory(model, batch, seed):
        return batch_loss(model, batch, StepObjective(0.1, epoch=1, seed=seed, options=settings))

    memory = with_memory(model, batch, 7)
    assert torch.isfinite(memory) and not torch.allclose(memory, plain)  # the type loss is added
    assert torch.equal(memory, with_memory(model, batch, 7))  # the step's seed fixes its sampled memory
    # The trained model's loss on this batch is the same whatever the seed (its sampling has one choice here); an
    # untrained model of the same vocabulary samples its memory from wide nuclei, where the seed decides the loss.
    untrained = make_tiny_working_memory(tokenizer).model
    losses = [with_memory(untrained, batch, seed).item() for seed in (7, 7, 8, 9, 10, 11)]
    assert losses[0] == losses[1] and len(set(losses)) > 2


def test_warm_start_needs_a_plain_transformer(tmp_path, synthetic_data_dir, tiny_config):
    folder = run_training(
        tiny_config("tiny_plain", epochs=1), synthetic_data_dir, tmp_path / "tiny_plain", tmp_path / "run", device="cpu"
    )
    transformer = load_checkpoint(folder, "cpu").model
    with pytest.raises(ConfigError, match="not from memory_transformer/memtransformer"):
        warm_start(transformer, {"family": "working_memory", "memory_size": 2})


def test_warm_start_reproduces_the_plain_transformer(tmp_path, synthetic_data_dir):
    config = config_from_dict(
        {
            "name": "tiny_base",
            "model": {**WM_MODEL, "family": "memory_transformer", "variant": "transformer", "memory_size": 0},
            "data": DATA,
            "train": {**TRAIN, "epochs": 1},
        }
    )
    transformer = load_checkpoint(
        run_training(config, synthetic_data_dir, tmp_path / "base", tmp_path / "run", device="cpu"), "cpu"
    )
    model = warm_start(transformer.model, {"family": "working_memory", "memory_size": 2}).eval()
    tokenizer = transformer.tokenizer
    src = pad_batch(tokenizer.encode_sources(["hund läuft", "katze"]), tokenizer.pad_id)
    tgt_in = pad_batch(
        [[tokenizer.bos_id] + tokenizer.encode("runs dog"), [tokenizer.bos_id] + tokenizer.encode("cat")],
        tokenizer.pad_id,
    )
    with torch.no_grad():
        expected = transformer.model.eval()(src, tgt_in)
        real = tgt_in != tokenizer.pad_id  # [b, t]
        logits, _ = model(src, tgt_in, torch.full_like(tgt_in, TARGET_TYPE), key_mask=real)
    assert torch.allclose(logits[real], expected[real], atol=1e-5)
