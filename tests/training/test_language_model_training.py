"""The language model's data, perplexity and training run, on generated
enwiki and WikiText files (tests/training/conftest.py)."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch

from inference.analyses.ff_mining import TriggerStore
from inference.core.checkpoint import (
    CARRIED_STATE_KEY,
    CheckpointError,
    CheckpointRegistry,
    load_checkpoint,
    store_study,
)
from inference.core.tokenizer import train_bpe
from inference.corpora.ff_study_files import TRIGGERS_FILE, read_triggers
from inference.families.language_model.model import LanguageModel
from tests.training.conftest import make_tiny_lm_config
from training.cli import main
from training.data.lm_corpora import WIKITEXT_FILES, detokenize_wikitext, read_enwiki, read_wikitext, split_sentences
from training.data.lm_streams import block_batches, load_or_tokenize, make_lm_batch, tokenize_documents
from training.evaluation.perplexity import document_totals, perplexity, score_stream, scoring_windows
from training.loop.config import ConfigError, config_from_dict
from training.loop.lm_run import TRAIN_STREAM, VAL_STREAM
from training.loop.translation_run import remeasure, run_training, store_half

EVAL_SPLITS = {"enwiki_val", *WIKITEXT_FILES}


def test_enwiki_drops_titles_and_stubs_and_splits_whole_articles(synthetic_lm_data_dir):
    splits = read_enwiki(synthetic_lm_data_dir)
    assert len(splits["train"]) + len(splits["val"]) == 90  # 120 articles, 30 empty stubs
    assert len(splits["val"]) == 1  # 1% of the articles, at least one
    assert all(len(document) == 5 for split in splits.values() for document in split)  # 3 + heading + 1 sentences
    assert not any("Article" in sentence for split in splits.values() for document in split for sentence in document)
    assert read_enwiki(synthetic_lm_data_dir) == splits  # seeded


def test_sentences_split_at_ends_but_not_at_initials_or_abbreviations():
    text = (
        'Dr. Smith met J. R. R. Tolkien in the U.S. Army in 1950. He left! "Quoted." '
        "Then he returned, e.g. to Paris. 2001 was a year."
    )
    assert split_sentences(text) == [
        "Dr. Smith met J. R. R. Tolkien in the U.S. Army in 1950.",
        "He left!",
        '"Quoted."',
        "Then he returned, e.g. to Paris.",
        "2001 was a year.",
    ]


def test_wikitext_is_detokenized_and_its_words_counted(synthetic_lm_data_dir):
    assert detokenize_wikitext(' The well @-@ known <unk> , 1 @,@ 000 ( approx . ) it \'s " fine " ; 2 @.@ 5 % . ') == (
        'The well-known <unk>, 1,000 (approx.) it\'s "fine"; 2.5%.'
    )
    split = read_wikitext(synthetic_lm_data_dir, "wikitext2_valid")
    assert [article[0] for article in split.articles] == ["= Title 0 =", "= Title 1 =", "= Title 2 ="]
    assert split.articles[0][-1] == "The well-known <unk>, 1,000."
    # Per article: 4 title + 2 x 7 sentence + 5 heading + 10 last-line tokens, one of them <unk>.
    assert (split.words, split.unk_words) == (3 * 32, 3)
    assert read_wikitext(synthetic_lm_data_dir, "wikitext103_valid").words == 3 * 33


def test_token_stream_is_documents_then_eos_with_sentence_spans(tmp_path):
    documents = [["The red cat sees the dog.", "Career."], ["The old city joins the river."]]
    tokenizer = train_bpe([s for d in documents for s in d] * 3, vocab_size=60)
    stream = tokenize_documents(tokenizer, documents)
    encoded = [tokenizer.encode(s) for d in documents for s in d]
    eos = tokenizer.eos_id
    assert stream.tokens.tolist() == encoded[0] + encoded[1] + [eos] + encoded[2] + [eos]
    assert [stream.tokens[a:b].tolist() for a, b in stream.sentence_spans.tolist()] == encoded
    assert stream.tokens.dtype == torch.int32

    cached = load_or_tokenize(tmp_path / "stream.safetensors", tokenizer, documents)
    again = load_or_tokenize(
        tmp_path / "stream.safetensors", tokenizer, []
    )  # read back from the cache, not re-tokenized
    assert torch.equal(again.tokens, cached.tokens) and torch.equal(again.sentence_spans, stream.sentence_spans)


def test_block_batches_are_seeded_contiguous_blocks():
    tokens = torch.arange(100, dtype=torch.int32)
    batches = block_batches(100, 8, 4, seed=3)
    assert batches == block_batches(100, 8, 4, seed=3) and batches != block_batches(100, 8, 4, seed=4)
    starts = sorted(s for batch in batches for s in batch)
    assert all(b - a == 8 for a, b in zip(starts, starts[1:])) and starts[-1] + 9 <= 100
    batch = make_lm_batch(tokens, batches[0], 8)
    assert batch.ids.shape == (4, 8) and torch.equal(batch.targets, batch.ids + 1)


@pytest.mark.parametrize(("n", "context", "stride"), [(2, 4, 2), (10, 4, 2), (11, 4, 4), (23, 6, 5), (5, 8, 4)])
def test_scoring_windows_score_every_target_once_with_enough_context(n, context, stride):
    scored = []
    for start, first in scoring_windows(n, context, stride):
        end = min(start + context, n - 1)
        targets = list(range(first, end + 1))
        assert all(
            j - 1 - start >= min(j - 1, context - stride) for j in targets
        )  # tokens of context before each target
        scored += targets
    assert scored == list(range(1, n))


def test_perplexity_is_exp_of_the_mean_nll_on_a_hand_computed_case():
    """A bigram model: the next-token distribution depends on the current token alone, so windows do not matter."""
    vocab, eos, unk, x, y = 6, 2, 3, 4, 5
    probabilities = torch.full((vocab, vocab), 1e-3)
    for current, following, p in ((eos, x, 0.5), (x, y, 0.25), (y, x, 0.8), (unk, y, 0.1)):
        probabilities[current, following] = p
    table = probabilities.log()  # [vocab, vocab] logits; softmax renormalises each row, so normalise first
    table = table - table.logsumexp(dim=-1, keepdim=True)
    stream = torch.tensor([eos, x, y, x, unk, y, eos, x])
    score = score_stream(lambda ids: table[ids], stream, context=3, unscored_ids=(eos, unk), pad_id=0, stride=2)
    # Scored targets: x|eos, y|x, x|y, y|unk, x|eos; unk|x and eos|y are not scored.
    expected_nll = -sum(
        math.log(float(probabilities[c, f] / probabilities[c].sum()))
        for c, f in ((eos, x), (x, y), (y, x), (unk, y), (eos, x))
    )
    assert (score.tokens, score.unscored) == (5, 2)
    assert score.nll == pytest.approx(expected_nll, rel=1e-5)
    assert score.token_perplexity == pytest.approx(math.exp(expected_nll / 5), rel=1e-5)
    assert perplexity(score.nll, 2) == pytest.approx(math.exp(expected_nll / 2), rel=1e-5)  # per word, two words say
    # Per document: [x y x unk y] scores x|eos, y|x, x|y, y|unk; [x] scores x|eos.
    documents = document_totals(stream, eos, score)
    first = -sum(
        math.log(float(probabilities[c, f] / probabilities[c].sum())) for c, f in ((eos, x), (x, y), (y, x), (unk, y))
    )
    assert documents["tokens"] == [4, 1]
    assert documents["nll"] == pytest.approx([first, expected_nll - first], abs=1e-3)

    uniform = score_stream(
        lambda ids: torch.zeros(*ids.shape, vocab), stream, context=4, unscored_ids=(eos, unk), pad_id=0
    )
    assert uniform.token_perplexity == pytest.approx(vocab)


@pytest.fixture(scope="module")
def trained_lm(tmp_path_factory, synthetic_lm_data_dir):
    """A 3-epoch run of the tiny language-model config: (checkpoint root, folder, run dir)."""
    root = tmp_path_factory.mktemp("trained_lm")
    folder = run_training(
        make_tiny_lm_config(), synthetic_lm_data_dir, root / "checkpoints" / "tiny_lm_test", root / "run", device="cpu"
    )
    return root / "checkpoints", folder, root / "run"


def test_language_model_loss_falls_and_perplexity_is_recorded(trained_lm, synthetic_lm_data_dir):
    _, folder, run_dir = trained_lm
    metrics = json.loads((folder / "metrics.json").read_text())
    train = metrics["train"]
    assert train["epochs"] == 3 and len(train["loss_curve"]) == len(train["val_loss"]) == 3 and "val_bleu" not in train
    assert train["loss_curve"][-1] < train["loss_curve"][0] - 0.5
    assert train["val_loss"][-1] < train["val_loss"][0]
    assert (
        set(metrics["perplexity"])
        == set(metrics["word_perplexity"])
        == set(metrics["perplexity_counts"]["splits"])
        == EVAL_SPLITS
    )
    counts = metrics["perplexity_counts"]
    assert (counts["context"], counts["stride"]) == (16, 8)
    for split, record in counts["splits"].items():
        assert metrics["perplexity"][split] == pytest.approx(math.exp(record["nll"] / record["tokens"]), rel=1e-3)
        assert metrics["word_perplexity"][split] == pytest.approx(math.exp(record["nll"] / record["words"]), rel=1e-3)
        assert math.isfinite(metrics["perplexity"][split]) and metrics["perplexity"][split] > 1
    assert metrics["perplexity"]["enwiki_val"] < 10  # the grammar is learnt: far better than uniform over 80 tokens
    assert counts["splits"]["wikitext2_valid"]["words"] == read_wikitext(synthetic_lm_data_dir, "wikitext2_valid").words
    assert counts["splits"]["wikitext2_valid"]["unscored"] >= 3 + 3  # three <unk> and three article separators
    assert (run_dir / TRAIN_STREAM).exists() and (run_dir / VAL_STREAM).exists()


def test_language_model_checkpoint_serves_through_the_registry(trained_lm):
    root, _, _ = trained_lm
    registry = CheckpointRegistry(root, device="cpu")
    entry = registry.entries["tiny_lm_test"]
    assert entry.ok, entry.error
    assert entry.config.family == "language_model" and entry.record.corpus == "enwiki"
    assert "89 articles" in entry.record.training_data
    assert (
        f"{entry.metrics.train and entry.metrics.train['steps']} steps of 8 blocks" in entry.record.description
    )  # what was trained, not the configured epochs
    loaded = registry.get("tiny_lm_test")
    assert isinstance(loaded.model, LanguageModel) and loaded.config.vocab_size == loaded.tokenizer.vocab_size


def test_rerun_of_a_finished_language_model_run_trains_no_more(trained_lm, synthetic_lm_data_dir):
    _, folder, run_dir = trained_lm
    steps = json.loads((folder / "metrics.json").read_text())["train"]["steps"]
    run_training(make_tiny_lm_config(), synthetic_lm_data_dir, folder, run_dir, device="cpu")
    assert json.loads((folder / "metrics.json").read_text())["train"]["steps"] == steps  # as a run from scratch
    log = (run_dir / "train.log").read_text()  # so the log says that the rerun started from the finished state
    assert log.count(" start: ") == 1 and f"resume at step {steps}: 3 epochs done" in log


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"data": {"dataset": "multi30k"}}, "predicts next tokens trains on data.dataset 'enwiki'"),
        (
            {"model": {"family": "memory_transformer", "variant": "transformer", "memory_size": 0}},
            "predicts next tokens trains on data.dataset 'enwiki'",
        ),
        ({"model": {"family": "language_model", "n_encoder_layers": 2}}, "model:"),
        ({"data": {"max_len": 64}}, "exceeds model.max_positions"),
    ],
)
def test_language_model_configs_are_checked(changes, message):
    values = {
        "name": "x",
        "model": {"family": "language_model", "max_positions": 32},
        "data": {"dataset": "enwiki", "max_len": 32},
        "train": {},
    }
    for section, update in changes.items():
        values[section] = {**values[section], **update}
    with pytest.raises(ConfigError, match=message):
        config_from_dict(values)


def test_max_articles_is_for_language_models_only():
    with pytest.raises(ConfigError, match="max_articles"):
        config_from_dict(
            {
                "name": "x",
                "model": {"family": "memory_transformer", "variant": "transformer", "memory_size": 0},
                "data": {"max_articles": 5},
                "train": {},
            }
        )


def test_store_half_remeasures_a_language_model(tmp_path, trained_lm, synthetic_lm_data_dir):
    _, source, _ = trained_lm
    folder = shutil.copytree(source, tmp_path / "tiny_lm_half")
    old, new = store_half(folder, synthetic_lm_data_dir, "cpu")
    assert json.loads((folder / "metrics.json").read_text()) == new and new["train"] == old["train"]
    assert (
        set(new) == set(old) and new["perplexity_counts"]["splits"].keys() == old["perplexity_counts"]["splits"].keys()
    )
    for split, record in new["perplexity_counts"]["splits"].items():
        assert (record["tokens"], record["words"]) == (
            old["perplexity_counts"]["splits"][split]["tokens"],
            old["perplexity_counts"]["splits"][split]["words"],
        )
        assert new["perplexity"][split] == pytest.approx(
            old["perplexity"][split], rel=0.01
        )  # float16 rounding moves it a little
    assert new == {
        **old,
        **remeasure(load_checkpoint(folder, "cpu"), synthetic_lm_data_dir),
    }  # the stored weights' numbers


def test_store_half_refuses_a_folder_holding_a_study_before_any_work(tmp_path, trained_lm, synthetic_lm_data_dir):
    _, source, _ = trained_lm
    folder = shutil.copytree(source, tmp_path / "tiny_lm_studied")
    store_study(folder, CARRIED_STATE_KEY, {"difference": {"perplexity": 1.0}})
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    with pytest.raises(CheckpointError, match="holds carried_state, a study of its current weights"):
        store_half(folder, synthetic_lm_data_dir, "cpu")
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    assert not (tmp_path / ".tiny_lm_studied.float16").exists()  # refused before staging a copy


def test_ff_memories_cli_mines_the_language_model_and_stores_its_study(
    tmp_path, trained_lm, synthetic_lm_data_dir, capsys
):
    _, source, _ = trained_lm
    folder = shutil.copytree(source, tmp_path / "tiny_lm_study")
    command = [
        "ff-memories",
        str(folder),
        "--data-dir",
        str(synthetic_lm_data_dir),
        "--device",
        "cpu",
        "--sentences",
        "40",
        "--eval-sentences",
        "12",
        "--batch-size",
        "8",
        "--top-k",
        "5",
        "--run-dir",
        str(tmp_path / "run"),
    ]
    assert main(command) == 0
    assert "agreement" in capsys.readouterr().out

    store = TriggerStore(read_triggers(folder / TRIGGERS_FILE))
    analysis = json.loads((folder / "ff_analysis.json").read_text())
    loaded = load_checkpoint(folder, "cpu")
    layers = [f"layers.{i}.ff" for i in range(loaded.config.n_layers)]
    assert store.layers == layers and store.sentences_consumed == analysis["mining"]["sentences"] == 40
    assert (
        [record["layer"] for record in analysis["agreement"]]
        == [record["layer"] for record in analysis["aggregation"]["layers"]]
        == layers
    )
    for record in analysis["aggregation"]["layers"]:
        assert record["residual_wins"] + record["ff_wins"] + record["all_agree"] + record[
            "composition"
        ] == pytest.approx(1.0)
    top = store.top_coefficients("layers.0.ff")  # [d_ff]
    key = int(top.argmax())
    assert store.triggers("layers.0.ff", key)[0].coefficient == pytest.approx(float(top[key]), rel=1e-3)

    before = (folder / TRIGGERS_FILE).read_bytes()
    assert main(command) == 0  # a rerun resumes from the finished state: nothing mined twice, the same record
    assert (folder / TRIGGERS_FILE).read_bytes() == before  # as a second mining from scratch would give too, so:
    rerun = json.loads((folder / "ff_analysis.json").read_text())["mining"]
    assert (rerun["sentences"], rerun["sentences_per_second"]) == (40, 0.0)  # none of them mined in this session
