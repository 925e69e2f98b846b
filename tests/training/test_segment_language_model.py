"""Paper 002's language-model comparison at test size: a segment-recurrent
decoder (RMT, Transformer-XL, no memory) trains on the generated enwiki
through the same run as the language model and is scored on windows of its
training block, segment by segment."""

from __future__ import annotations

import json

import pytest

from inference.core.checkpoint import CheckpointRegistry, load_checkpoint
from inference.core.family import capabilities_of
from inference.core.segment_memory import segment_setup
from training.data.lm_corpora import read_enwiki
from training.data.lm_streams import evaluation_stream, tokenize_documents
from training.evaluation.perplexity import score_stream, unscored_ids
from training.loop.config import ConfigError, config_from_dict
from training.loop.translation_run import remeasure, run_training


def segment_lm_values(name: str, memory_size: int, cache_length: int) -> dict:
    return {
        "name": name,
        "model": {
            "family": "recurrent_memory",
            "d_model": 32,
            "d_ff": 64,
            "n_heads": 2,
            "n_layers": 2,
            "segment_length": 8,
            "memory_size": memory_size,
            "cache_length": cache_length,
            "bptt_depth": -1,
        },
        "data": {"dataset": "enwiki", "vocab_size": 80, "max_len": 24, "wikitext": ["wikitext103_test"]},
        "train": {"epochs": 3, "batch_size": 8, "warmup_steps": 20, "label_smoothing": 0.0, "seed": 0},
    }


@pytest.fixture(scope="module")
def trained_rmt_lm(tmp_path_factory, synthetic_lm_data_dir):
    """(checkpoint root, folder) of a 3-epoch RMT language model: segments of 8, 2 memory tokens, blocks of 24."""
    root = tmp_path_factory.mktemp("segment_lm")
    folder = run_training(
        config_from_dict(segment_lm_values("tiny_rmt_lm", 2, 0)),
        synthetic_lm_data_dir,
        root / "checkpoints" / "tiny_rmt_lm",
        root / "run",
        device="cpu",
    )
    return root / "checkpoints", folder


def test_a_segment_language_model_trains_and_is_scored_on_its_block_windows(trained_rmt_lm, synthetic_lm_data_dir):
    root, folder = trained_rmt_lm
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["train"]["loss_curve"][-1] < metrics["train"]["loss_curve"][0] - 0.5
    assert metrics["train"]["config"] == "tiny_rmt_lm"  # the results table finds its training config by this name
    counts = metrics["perplexity_counts"]
    assert (counts["context"], counts["stride"]) == (24, 12)  # the training block, not max_positions
    assert set(metrics["perplexity"]) == {"enwiki_val", "wikitext103_test"}  # the config's WikiText splits only
    assert metrics["perplexity"]["enwiki_val"] < 10  # the generated grammar is learnt (80 tokens: uniform is 80)

    entry = CheckpointRegistry(root, device="cpu").entries["tiny_rmt_lm"]
    assert entry.ok, entry.error
    assert "segments of 8 tokens, RMT, 2 memory tokens, BPTT depth -1" in entry.record.description
    assert entry.record.memory_size == 2
    loaded = load_checkpoint(folder, "cpu")
    assert segment_setup(loaded.config) == "RMT, 2 memory tokens; segments of 8 tokens"  # the Segments page's name
    assert len(loaded.tokenizer.encode(entry.record.example)) > 3 * 8  # the Segments page opens on 4+ segments
    assert {"segments", "memory_tokens", "next_token"} <= capabilities_of(loaded.config)
    assert remeasure(loaded, synthetic_lm_data_dir) == {
        k: v for k, v in metrics.items() if k not in ("version", "train")
    }


def test_the_memory_carries_context_across_segments_in_scoring(trained_rmt_lm, synthetic_lm_data_dir):
    """The same weights scored with the memory cut (0 memory tokens) lose the earlier segments:
    the trained memory makes the windows' later segments more predictable."""
    _, folder = trained_rmt_lm
    loaded = load_checkpoint(folder, "cpu")
    model, tokenizer = loaded.model.eval(), loaded.tokenizer
    recorded = json.loads((folder / "metrics.json").read_text())["perplexity_counts"]["splits"]["enwiki_val"]
    val = read_enwiki(synthetic_lm_data_dir)["val"]
    tokens = evaluation_stream(tokenize_documents(tokenizer, val), tokenizer.eos_id)
    unscored = unscored_ids(tokenizer)
    with_memory = score_stream(model, tokens, 24, unscored, tokenizer.pad_id, 12)
    without = score_stream(lambda ids: model(ids, 0), tokens, 24, unscored, tokenizer.pad_id, 12)
    assert with_memory.tokens == without.tokens == recorded["tokens"]
    assert with_memory.nll == pytest.approx(recorded["nll"], abs=1e-2)
    assert with_memory.nll < without.nll


def test_a_segment_model_trains_on_text_only():
    with pytest.raises(ConfigError, match="predicts next tokens trains on data.dataset 'enwiki'"):
        config_from_dict({**segment_lm_values("x", 2, 0), "data": {"dataset": "multi30k"}})
