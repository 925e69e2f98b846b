"""Issue 36's training path at test size: a GPT-2 trained by our CLI's run on the generated enwiki is written as an
ordinary Hugging Face folder (opened by the Hugging Face family, rounded to float16 by store-half), memory is added
to it and trained on enwiki segments, and the copy task trains on it with its characters read as the GPT-2's
tokens."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from inference.core.checkpoint import CheckpointRegistry, load_checkpoint, save_checkpoint, save_folder
from inference.core.family import build_model
from inference.core.tokenizer import character_tokenizer
from inference.core.tracing import run_with_trace
from inference.families.hugging_face.memory_model import MemoryAugmentedLM
from inference.families.hugging_face.model import HookedCausalLM, HuggingFaceConfig
from training.loop.config import ConfigError, config_from_dict
from training.loop.segment_task_run import TaskRun, base_lookup, scores, train_task
from training.loop.translation_run import remeasure, run_training, store_half
from training.tasks.rmt_tasks import GO, TOKENS, task_split


def gpt2_values(name: str = "tiny_gpt2") -> dict:
    return {
        "name": name,
        "model": {
            "family": "hugging_face",
            "model_type": "gpt2",
            "d_model": 32,
            "d_ff": 64,
            "n_heads": 2,
            "n_layers": 2,
            "max_positions": 32,
        },
        "data": {"dataset": "enwiki", "vocab_size": 80, "max_len": 24, "wikitext": ["wikitext103_test"]},
        "train": {"epochs": 3, "batch_size": 8, "warmup_steps": 20, "label_smoothing": 0.0, "seed": 0},
    }


def memory_values(base: Path, carry: bool) -> dict:
    return {
        "name": f"tiny_gpt2_memory_{carry}",
        "init_from": str(base),
        "model": {"family": "pretrained_memory", "memory_size": 2, "segment_length": 8, "carry_memory": carry},
        "data": {"dataset": "enwiki", "max_len": 24, "wikitext": ["wikitext103_test"]},
        "train": {"epochs": 1, "batch_size": 8, "warmup_steps": 20, "label_smoothing": 0.0, "seed": 0},
    }


@pytest.fixture(scope="module")
def trained_gpt2(tmp_path_factory, synthetic_lm_data_dir) -> Path:
    root = tmp_path_factory.mktemp("gpt2")
    return run_training(
        config_from_dict(gpt2_values()), synthetic_lm_data_dir, root / "models" / "tiny_gpt2", root / "run", "cpu"
    )


def test_the_gpt2_is_an_ordinary_hugging_face_folder_that_learnt_the_text(trained_gpt2, synthetic_lm_data_dir):
    config = json.loads((trained_gpt2 / "config.json").read_text())
    assert config["model_type"] == "gpt2" and "format_version" not in config  # save_pretrained's, not ours
    assert (config["n_embd"], config["n_layer"], config["n_inner"], config["n_positions"]) == (32, 2, 64, 32)
    assert (config["pad_token_id"], config["bos_token_id"], config["eos_token_id"]) == (0, 1, 2)  # the BPE's
    metrics = json.loads((trained_gpt2 / "metrics.json").read_text())
    assert metrics["perplexity"]["enwiki_val"] < 10  # the generated grammar is learnt (80 tokens: uniform is 80)
    entry = CheckpointRegistry(trained_gpt2.parent, device="cpu").entries["tiny_gpt2"]
    assert entry.ok, entry.error
    assert entry.config.family == "hugging_face" and entry.record.format == "Hugging Face"
    assert "3 epochs" not in entry.record.description and "steps of 8 blocks" in entry.record.description
    loaded = load_checkpoint(trained_gpt2, "cpu")
    assert isinstance(loaded.model, HookedCausalLM)
    assert remeasure(loaded, synthetic_lm_data_dir) == {
        k: v for k, v in metrics.items() if k not in ("version", "train")
    }


def test_store_half_rounds_the_hugging_face_folder_and_remeasures_it(trained_gpt2, synthetic_lm_data_dir, tmp_path):
    folder = tmp_path / "tiny_gpt2"
    folder.mkdir()
    for path in trained_gpt2.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    old, new = store_half(folder, synthetic_lm_data_dir, "cpu")
    with safe_open(str(folder / "model.safetensors"), framework="pt") as weights:
        assert {weights.get_slice(name).get_dtype() for name in weights.keys()} == {"F16"}
    assert json.loads((folder / "memlens.json").read_text())["weights_dtype"] == "float16"
    assert (
        abs(new["perplexity"]["enwiki_val"] - old["perplexity"]["enwiki_val"]) < 0.05 * old["perplexity"]["enwiki_val"]
    )
    assert new == {**old, **remeasure(load_checkpoint(folder, "cpu"), synthetic_lm_data_dir)}


@pytest.fixture(scope="module")
def memory_runs(trained_gpt2, synthetic_lm_data_dir, tmp_path_factory) -> dict[bool, Path]:
    root = tmp_path_factory.mktemp("memory")
    return {
        carry: run_training(
            config_from_dict(memory_values(trained_gpt2, carry)),
            synthetic_lm_data_dir,
            root / f"carry_{carry}",
            root / f"run_{carry}",
            "cpu",
        )
        for carry in (True, False)
    }


def test_memory_added_to_the_gpt2_trains_on_segments_from_its_weights(trained_gpt2, memory_runs, synthetic_lm_data_dir):
    base = load_checkpoint(trained_gpt2, "cpu")
    for carry, folder in memory_runs.items():
        loaded = load_checkpoint(folder, "cpu")
        assert isinstance(loaded.model, MemoryAugmentedLM)
        assert loaded.config.carry_memory is carry and loaded.config.base_config == base.config
        assert loaded.tokenizer.encode("the cat") == base.tokenizer.encode("the cat")  # the GPT-2's tokens
        metrics = json.loads((folder / "metrics.json").read_text())
        assert metrics["perplexity_counts"]["context"] == 24
        assert remeasure(loaded, synthetic_lm_data_dir) == {
            k: v for k, v in metrics.items() if k not in ("version", "train")
        }
        meta = json.loads((folder / "config.json").read_text())["meta"]
        assert f"from {trained_gpt2}" in meta["description"] and "segments of 8 tokens" in meta["description"]
    carried = load_checkpoint(memory_runs[True], "cpu")
    text = "the cat saw a dog in the old house by the river"
    trace = run_with_trace(carried, text)
    segments = math.ceil(len(carried.tokenizer.encode(text)) / 8)
    assert segments > 1
    assert [call.index["segment"] for call in trace.captures["memory.write"].calls] == list(range(segments))


def test_memory_needs_a_hugging_face_model_to_start_from(tmp_path, synthetic_lm_data_dir):
    own = build_model(
        config_from_dict(
            {
                **gpt2_values(),
                "model": {
                    "family": "language_model",
                    "d_model": 16,
                    "d_ff": 32,
                    "n_heads": 2,
                    "n_layers": 1,
                    "max_positions": 32,
                },
            }  # fmt: skip
        ).model_config(character_tokenizer("abc"))
    )
    folder = save_checkpoint(tmp_path / "own_lm", own, character_tokenizer("abc"))
    config = config_from_dict(memory_values(folder, True))
    with pytest.raises(ConfigError, match="memory is added to a Hugging Face causal language model"):
        run_training(config, synthetic_lm_data_dir, tmp_path / "out", tmp_path / "run", "cpu")


def character_gpt2(folder: Path) -> Path:
    """A tiny random GPT-2 over the copy task's characters, saved as a Hugging Face folder."""
    tokenizer = character_tokenizer(TOKENS[4:])
    config = HuggingFaceConfig("gpt2", 2, 2, 32, 64, 128, tokenizer.vocab_size, 0, 1, 2)
    torch.manual_seed(0)
    return save_folder(folder, build_model(config), tokenizer, {}, {})


def test_the_copy_task_trains_on_a_pretrained_base_with_its_tokens(tmp_path):
    base = character_gpt2(tmp_path / "base")
    tokenizer = load_checkpoint(base, "cpu").tokenizer
    test = task_split("copy", "test", 1000)
    lookup = base_lookup(tokenizer, {i for sample in test for i in sample.stream}, "cpu")
    assert lookup[GO] == tokenizer.bos_id
    assert [int(lookup[i]) for i in test[0].source] == tokenizer.encode("".join(TOKENS[i] for i in test[0].source))

    run = TaskRun("copy", 3, "rmt", 1, steps=4, batch_size=4, memory=2, eval_every=2, base=str(base))
    metrics = train_task(run, tmp_path / "out", tmp_path / "run", log=lambda line: None)
    loaded = load_checkpoint(tmp_path / "out", "cpu")
    assert isinstance(loaded.model, MemoryAugmentedLM) and loaded.config.segment_length == 25  # 73 tokens in 3
    assert scores(loaded.model, test, lookup) == metrics["test"]
    assert len(metrics["test"]["sample_char_hits"]) == 1000 and max(metrics["test"]["sample_char_hits"]) <= 48
    example = json.loads((tmp_path / "out" / "config.json").read_text())["meta"]["example"]
    assert loaded.tokenizer.encode(example) == [int(lookup[i]) for i in test[0].stream]  # as a person types it
    assert run.name == "copy_3seg_rmt2_on_base_4steps_seed1"  # 2 memory tokens, not the default 8


def test_task_runs_refuse_a_reset_without_a_base_and_a_cache_with_one(tmp_path):
    with pytest.raises(ValueError, match="pretrained base"):
        TaskRun("copy", 3, "reset", 1)
    with pytest.raises(ValueError, match="carried \\(rmt\\) or reset"):
        TaskRun("copy", 3, "xl", 1, base=str(tmp_path))


def test_a_base_tokenizer_that_splits_a_task_character_is_refused(tmp_path):
    tokenizer = character_tokenizer("0123")  # has no "7"
    with pytest.raises(ValueError, match="task character '7'"):
        base_lookup(tokenizer, {TOKENS.index("7")}, "cpu")


def test_a_language_model_starts_from_a_checkpoint_only_to_have_memory_added(trained_gpt2):
    plain = {**memory_values(trained_gpt2, True)}
    del plain["model"]
    with pytest.raises(ConfigError, match="only to have memory added"):
        config_from_dict(plain)
    with pytest.raises(ConfigError, match="set init_from to its folder"):
        config_from_dict({**gpt2_values(), "model": memory_values(trained_gpt2, True)["model"]})
