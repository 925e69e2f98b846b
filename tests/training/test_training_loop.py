from __future__ import annotations

import pytest
import torch

from inference.core.family import build_model
from inference.core.losses import StepObjective
from inference.families.memory_transformer.model import VARIANTS, MemoryTransformerConfig
from training.data.translation import make_batch, read_multi30k, tokenize_pairs
from training.data.vocabulary import train_shared_vocabulary
from training.loop.epochs import batch_loss, make_optimizer, noam_lr
from training.loop.run_dir import Progress, RunDir


def test_noam_schedule_peaks_at_the_end_of_warmup():
    rates = [noam_lr(step, d_model=128, warmup_steps=4000) for step in (1, 2000, 4000, 8000, 16000)]
    assert rates[0] < rates[1] < rates[2] > rates[3] > rates[4]
    assert rates[2] == pytest.approx(128**-0.5 * 4000**-0.5)
    assert rates[1] == pytest.approx(rates[2] / 2)  # linear warmup
    assert rates[4] == pytest.approx(rates[2] / 2)  # step^-0.5 decay


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_trains_and_its_state_round_trips(variant, tmp_path, synthetic_data_dir, tiny_config):
    """One step per Memory Transformer variant, then the saved state restores into a fresh model
    and optimiser (tied MemCtrl Shared weights and the empty baseline memory included)."""
    pairs = read_multi30k(synthetic_data_dir, "train")[:32]
    tokenizer = train_shared_vocabulary(pairs, 60)
    config = MemoryTransformerConfig(
        variant=variant, vocab_size=tokenizer.vocab_size, d_model=16, d_ff=32, n_heads=2,
        n_encoder_layers=2, n_decoder_layers=1, memory_size=0 if variant == "transformer" else 3,
    )  # fmt: skip
    torch.manual_seed(0)
    model = build_model(config)
    optimizer = make_optimizer(model)
    optimizer.param_groups[0]["lr"] = 1e-3
    batch = make_batch(tokenize_pairs(tokenizer, pairs, 20), tokenizer)
    loss = batch_loss(model.train(), batch, StepObjective(label_smoothing=0.1))
    loss.backward()
    optimizer.step()
    run = RunDir(tmp_path, tiny_config())
    run.save_state(model, optimizer, Progress(step=1))

    restored = build_model(config)
    restored_optimizer = make_optimizer(restored)
    assert run.load_state(restored, restored_optimizer) == Progress(step=1)
    for (name, expected), found in zip(model.state_dict().items(), restored.state_dict().values()):
        torch.testing.assert_close(found, expected, rtol=0, atol=0, msg=name)
    assert restored_optimizer.state_dict()["state"].keys() == optimizer.state_dict()["state"].keys()
