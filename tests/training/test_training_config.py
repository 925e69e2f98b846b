from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference.core.places import REPO_ROOT
from training.loop.config import ConfigError, config_from_dict, load_config

SHIPPED = sorted((REPO_ROOT / "training" / "configs").glob("*.json"))
MINIMAL = {
    "name": "x",
    "model": {"family": "memory_transformer", "variant": "memtransformer", "memory_size": 4},
    "data": {},
    "train": {},
}


def with_changes(**sections: dict) -> dict:
    config = json.loads(json.dumps(MINIMAL))
    for section, values in sections.items():
        if isinstance(config.get(section), dict):
            config[section].update(values)
        else:
            config[section] = values
    return config


def test_minimal_config_takes_the_paper_defaults():
    config = config_from_dict(MINIMAL)
    assert (config.train.batch_size, config.train.warmup_steps, config.train.epochs) == (64, 4000, 20)
    assert config.train.label_smoothing == 0.1


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"learning_rate": 0.1}, "learning_rate"),
        ({"train": {"epoch": 3}}, "train.epoch"),
        ({"data": {"vocab": 100}}, "data.vocab"),
        ({"model": {"d_modle": 64}}, "model.d_modle"),
    ],
)
def test_unknown_keys_are_errors_that_name_the_key(changes, key):
    with pytest.raises(ConfigError, match=f"unknown key '{key}'"):
        config_from_dict(with_changes(**changes))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": {"vocab_size": 100}}, "comes from the tokenizer"),
        ({"model": {"family": "lstm"}}, "unknown family"),
        ({"train": {"epochs": 0}}, "train.epochs"),
        ({"grow_memory_to": 8}, "needs init_from"),
        ({"init_from": "checkpoints/x"}, "remove the 'model' section"),
        ({"data": {"max_eval_pairs": 0}}, "data.max_eval_pairs"),
        ({"train": {"threads": 0}}, "train.threads"),
        (
            {"model": {"family": "language_model"}, "data": {"dataset": "enwiki", "max_pairs": 100}},
            "a language model has data.max_articles",
        ),
    ],
)
def test_invalid_values_are_errors(changes, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict(with_changes(**changes))


def test_an_unknown_key_in_the_working_memory_section_lists_that_sections_keys():
    changes = {"model": {"family": "working_memory"}, "working_memory": {"plain_epoch": 1}}
    with pytest.raises(ConfigError, match=r"unknown key 'working_memory.plain_epoch' \(allowed here: plain_epochs, "):
        config_from_dict(with_changes(**changes))


def test_load_config_names_the_file(tmp_path: Path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(with_changes(train={"lr": 1})))
    with pytest.raises(ConfigError, match="bad.json: unknown key 'train.lr'"):
        load_config(path)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_configs_load_and_are_named_after_their_file(path: Path):
    assert load_config(path).name == path.stem


def test_all_shipped_models_have_a_config():
    expected = {
        "transformer", "memtransformer_5", "memtransformer_10", "memtransformer_20", "memctrl_20", "memctrl_shared_20",
        "membottleneck_10", "membottleneck_20", "membottleneck_skip_20", "memtransformer_5_to_10",
        "memtransformer_10_to_15", "memtransformer_15_to_20", "memtransformer_5_finetuned", "tiny",
        "working_memory_de_en", "working_memory_ru_en", "transformer_finetuned", "tiny_working_memory",
        "language_model", "tiny_language_model", "lm_seg50_baseline", "lm_seg50_xl10", "lm_seg50_xl50",
        "lm_seg50_rmt1", "lm_seg50_rmt5", "lm_seg50_rmt10", "neural_gpu_de_en", "markovian_neural_gpu_de_en",
        "extended_neural_gpu_de_en", "extended_neural_gpu_de_en_1epoch", "gru_attention_de_en",
        "gru_attention_de_en_1epoch", "transformer_4_epochs", "memtransformer_10_4_epochs",
        "memtransformer_20_4_epochs", "membottleneck_10_4_epochs", "memctrl_20_4_epochs",
        "memtransformer_5_4_epochs", "membottleneck_20_4_epochs", "membottleneck_skip_20_4_epochs",
        "memctrl_shared_20_4_epochs", "memtransformer_5_to_10_4_epochs", "memtransformer_10_to_15_4_epochs",
        "memtransformer_15_to_20_4_epochs", "memtransformer_5_finetuned_4_epochs", "working_memory_de_en_4_epochs",
        "gpt2_enwiki", "tiny_gpt2", "gpt2_enwiki_memory10", "gpt2_enwiki_memory10_reset", "marian_de_en_4_epochs",
        "tiny_marian", "lm_seg50_20m_baseline", "lm_seg50_20m_xl10", "lm_seg50_20m_xl50", "lm_seg50_20m_rmt1",
        "lm_seg50_20m_rmt5", "lm_seg50_20m_rmt10", "extended_neural_gpu_de_en_8epochs", "gru_attention_de_en_8epochs",
    }  # fmt: skip
    assert {path.stem for path in SHIPPED} == expected


def test_memory_extension_stages_chain():
    """Each stage starts from the previous stage's checkpoint and grows by 5, on the paper's schedule from the
    20-epoch MemTransformer 5 and, kept in short_schedule, from its 4-epoch run."""
    for suffix, kept, epochs in (("", "", 5), ("_4_epochs", "short_schedule/", 1)):
        stages = [
            load_config(REPO_ROOT / "training" / "configs" / f"memtransformer_{a}_to_{b}{suffix}.json")
            for a, b in ((5, 10), (10, 15), (15, 20))
        ]
        assert [s.init_from for s in stages] == [
            f"checkpoints/{kept}memtransformer_5",
            f"checkpoints/{kept}memtransformer_5_to_10",
            f"checkpoints/{kept}memtransformer_10_to_15",
        ]
        assert [s.grow_memory_to for s in stages] == [10, 15, 20]
        assert {(s.train.epochs, s.train.batch_size) for s in stages} == {(epochs, 64)}  # one schedule per stage
        control = load_config(REPO_ROOT / "training" / "configs" / f"memtransformer_5_finetuned{suffix}.json")
        assert control.init_from == stages[0].init_from and control.train.epochs == 3 * epochs
