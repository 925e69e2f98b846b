"""The carried-state study (training.studies.carried_state) on tiny random segment models,
checked against perplexities scored by hand segment by segment, and its markdown table
(training.report.carried_state) on a hand-written record."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from inference.analyses.carried_state import AS_TRAINED, WITHOUT
from inference.core.checkpoint import load_checkpoint, save_checkpoint
from inference.core.family import LoadedModel, build_model, family_of
from inference.core.family_folders import load_families
from inference.core.places import REPO_ROOT
from inference.core.tokenizer import TextTokenizer, train_bpe
from inference.corpora.multi30k import DataError
from inference.families.recurrent_memory.model import RecurrentMemoryConfig
from tests.conftest import tiny_config
from tests.hugging_face_models import build_folder
from training.cli import main
from training.evaluation.bootstrap import paired_perplexity_difference
from training.evaluation.perplexity import scoring_windows
from training.report.carried_state import render_carried_state
from training.studies.carried_state import (
    carried_state_record,
    measure_carried_state,
    validation_stream,
)

SEGMENT, CONTEXT, STRIDE = 4, 12, 6  # windows of 3 segments


def tiny_segment_model(vocab_size: int, memory: int, cache: int, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = RecurrentMemoryConfig(
        vocab_size=vocab_size, d_model=16, d_ff=32, n_heads=2, n_layers=2, segment_length=SEGMENT,
        memory_size=memory, cache_length=cache, max_positions=64,
    )  # fmt: skip
    model = build_model(config).eval()
    with torch.no_grad():  # a carried state that matters: small initial memory, strong attention outputs
        model.memory_init.mul_(0.1)
        for layer in model.layers:
            layer.attn.out_proj.weight.mul_(4.0)
    return model


def random_stream(tokenizer: TextTokenizer, length: int = 71, seed: int = 1) -> torch.Tensor:  # [length]
    """Random text ids with an EOS in front and after every 17 tokens, and two UNK targets."""
    ids = torch.randint(4, tokenizer.vocab_size, (length,), generator=torch.Generator().manual_seed(seed))
    ids[::17] = tokenizer.eos_id
    ids[[20, 45]] = tokenizer.unk_id
    return ids


def hand_nll(model, stream: torch.Tensor, unscored: set[int], alone: bool) -> tuple[float, int]:
    """Summed NLL and scored targets, window by window (no padding): each window read whole,
    or (alone) each of its segments read on its own, from the initial memory and without a cache."""
    nll, tokens = 0.0, 0
    with torch.no_grad():
        for start, first in scoring_windows(len(stream), CONTEXT, STRIDE):
            end = min(start + CONTEXT, len(stream) - 1)
            ids = stream[None, start:end]  # [1, w]
            pieces = (
                [model(ids[:, s : s + SEGMENT]) for s in range(0, ids.shape[1], SEGMENT)] if alone else [model(ids)]
            )
            log_probs = F.log_softmax(torch.cat(pieces, dim=1)[0], dim=-1)  # [w, vocab]
            for position in range(first, end + 1):
                if int(stream[position]) not in unscored:
                    nll -= float(log_probs[position - start - 1, stream[position]])
                    tokens += 1
    return nll, tokens


@pytest.mark.parametrize(("memory", "cache"), [(2, 0), (0, 3)], ids=["rmt", "transformer_xl"])
def test_removed_state_equals_every_segment_scored_alone(tiny_tokenizer, memory, cache):
    model = tiny_segment_model(tiny_tokenizer.vocab_size, memory, cache)
    stream = random_stream(tiny_tokenizer)
    record = carried_state_record(LoadedModel("tiny", model, tiny_tokenizer), stream, 5, CONTEXT, STRIDE, "cpu")
    unscored = {tiny_tokenizer.eos_id, tiny_tokenizer.unk_id}
    trained_nll, tokens = hand_nll(model, stream, unscored, alone=False)
    alone_nll, _ = hand_nll(model, stream, unscored, alone=True)
    assert tokens == record["text"]["scored"] == sum(record["documents"]["tokens"]) == 71 - 1 - 4 - 2
    assert record["nll"][AS_TRAINED] == pytest.approx(trained_nll, rel=1e-5)
    assert record["nll"][WITHOUT] == pytest.approx(alone_nll, rel=1e-5)
    assert record["perplexity"][WITHOUT] == pytest.approx(math.exp(alone_nll / tokens), abs=2e-3)
    assert abs(alone_nll - trained_nll) > 1.0  # the tiny model does carry something: the test can tell
    assert record["text"]["documents_scored"] == 5 and record["text"]["windows"] == 11


def test_rmt_with_cache_loses_both_and_a_model_without_either_is_refused(tiny_tokenizer):
    stream = random_stream(tiny_tokenizer)
    both = tiny_segment_model(tiny_tokenizer.vocab_size, 2, 3)
    record = carried_state_record(LoadedModel("tiny", both, tiny_tokenizer), stream, 5, CONTEXT, STRIDE, "cpu")
    alone_nll, _ = hand_nll(both, stream, {tiny_tokenizer.eos_id, tiny_tokenizer.unk_id}, alone=True)
    assert record["nll"][WITHOUT] == pytest.approx(alone_nll, rel=1e-5)
    assert "memory reset" in record["removed"] and "no cache" in record["removed"]
    neither = tiny_segment_model(tiny_tokenizer.vocab_size, 0, 0)
    with pytest.raises(ValueError, match="carries nothing"):
        carried_state_record(LoadedModel("tiny", neither, tiny_tokenizer), stream, 5, CONTEXT, STRIDE, "cpu")


def test_memory_added_to_a_pretrained_model_is_reset_at_every_segment(tiny_tokenizer, tmp_path):
    """The study is family-neutral: a pretrained_memory model (tiny random GPT-2 under RMT memory) has no cache,
    and without its carried memory each segment reads from the initial memory, as scored by hand."""
    load_families()
    base = load_checkpoint(build_folder("gpt2", tmp_path / "gpt2"), "cpu")
    fields = {"family": "pretrained_memory", "memory_size": 2, "segment_length": SEGMENT, "max_positions": 64}
    model = family_of("pretrained_memory").warm_start(base.model, fields, seed=3).eval()
    stream = random_stream(tiny_tokenizer)
    record = carried_state_record(LoadedModel("tiny", model, tiny_tokenizer), stream, 5, CONTEXT, STRIDE, "cpu")
    unscored = {tiny_tokenizer.eos_id, tiny_tokenizer.unk_id}
    trained_nll, _ = hand_nll(model, stream, unscored, alone=False)
    alone_nll, _ = hand_nll(model, stream, unscored, alone=True)
    assert record["nll"][AS_TRAINED] == pytest.approx(trained_nll, rel=1e-5)
    assert record["nll"][WITHOUT] == pytest.approx(alone_nll, rel=1e-5)
    assert abs(alone_nll - trained_nll) > 0.1  # the carried memory changes the scores: the test can tell
    assert (record["cache_length"], record["segment_length"]) == (0, SEGMENT)
    assert record["removed"] == "memory reset to its initial value at every segment"


def write_enwiki(root: Path, articles: int = 300) -> Path:
    """root/enwiki/text/AA/wiki_00.gz: WikiExtractor blocks (title line, then the body); 1% of 300 is validation."""
    folder = root / "enwiki" / "text" / "AA"
    folder.mkdir(parents=True)
    words = "the cat sat on a mat while dogs ran far away from home and birds sang".split()
    with gzip.open(folder / "wiki_00.gz", "wt", encoding="utf-8") as out:
        for i in range(articles):
            body = " ".join(words[(i + k) % len(words)] for k in range(9 + i % 7)).capitalize()
            out.write(f'<doc id="{i}" title="Article {i}">\nArticle {i}\n{body}. It is number {i}.\n</doc>\n')
    return root


def test_measure_writes_the_record_into_the_checkpoints_metrics(tmp_path):
    data_dir = write_enwiki(tmp_path / "data")
    tokenizer = train_bpe(["the cat sat on a mat while dogs ran far away from home and birds sang"] * 4, 60)
    model = tiny_segment_model(tokenizer.vocab_size, 2, 0)
    metrics = {"perplexity_counts": {"context": CONTEXT, "stride": STRIDE}}
    folder = save_checkpoint(tmp_path / "lm_rmt2", model, tokenizer, {}, metrics)
    command = ["carried-state", str(folder), "--data-dir", str(data_dir), "--articles", "2", "--device", "cpu"]
    assert main(command) == 0  # as a user runs it: python -m training carried-state ...
    written = json.loads((folder / "metrics.json").read_text())
    assert written["perplexity_counts"] == metrics["perplexity_counts"]  # the metrics kept, the record added
    record = written["carried_state"]
    from training.data.lm_corpora import read_enwiki

    stream = validation_stream(tokenizer, read_enwiki(data_dir)["val"][:2])
    assert record["text"]["stream_tokens"] == len(stream) and record["text"]["documents_scored"] == 2
    documents = record["documents"]
    assert sum(documents["tokens"]) == record["text"]["scored"]
    assert sum(documents[f"nll_{AS_TRAINED}"]) == pytest.approx(record["nll"][AS_TRAINED], abs=0.01)
    expected = paired_perplexity_difference(documents[f"nll_{WITHOUT}"], documents[f"nll_{AS_TRAINED}"],
                                            documents["tokens"], seed=0)  # fmt: skip
    d = record["difference"]
    assert [d["perplexity"], d["low"], d["high"]] == list(expected)
    with pytest.raises(DataError, match="articles must lie in 1..3"):
        measure_carried_state(folder, data_dir, articles=4)
    assert main([*command[:-4], "--articles", "4"]) == 2  # said in one line, no traceback


def test_a_checkpoint_that_reads_no_segments_is_refused_in_one_line(tmp_path, tiny_tokenizer, capsys):
    model = build_model(tiny_config("memtransformer", tiny_tokenizer.vocab_size))
    metrics = {"perplexity_counts": {"context": CONTEXT, "stride": STRIDE}}
    folder = save_checkpoint(tmp_path / "memtransformer", model, tiny_tokenizer, {}, metrics)
    data_dir = write_enwiki(tmp_path / "data")
    assert main(["carried-state", str(folder), "--data-dir", str(data_dir), "--device", "cpu"]) == 2
    assert "reads no segments: it carries nothing between them to remove" in capsys.readouterr().err


def fixture_record(name: str, memory: int, cache: int, ppl: tuple[float, float], d: tuple[float, ...]) -> dict:
    text = {"split": "enwiki_val", "articles": 120, "documents_scored": 120, "stream_tokens": 42042, "scored": 41918,
            "unscored": 123, "context": 250, "stride": 125, "windows": 336}  # fmt: skip
    return {
        "model": name, "variant": "v", "memory_size": memory, "cache_length": cache, "segment_length": 50,
        "removed": "r", "text": text, "perplexity": {AS_TRAINED: ppl[0], WITHOUT: ppl[1]},
        "difference": {"perplexity": d[0], "low": d[1], "high": d[2], "level": 0.95, "resamples": 2000, "seed": 0},
    }  # fmt: skip


def test_render_prints_the_records_figures_in_the_runs_order(tmp_path):
    records = [
        fixture_record("lm_seg50_rmt1", 1, 0, (259.72, 260.249), (0.529, 0.31, 0.764)),
        fixture_record("lm_seg50_xl50", 0, 50, (253.7, 261.3), (7.6, 6.012, 9.3)),
        fixture_record("lm_seg50_xl10", 0, 10, (251.66, 258.2), (6.54, 5.1, 7.996)),
    ]
    served = fixture_record("rmt1_served", 1, 0, (129.571, 132.674), (3.103, 2.327, 3.79))
    for folder, record in [*((tmp_path / "segment_lm", r) for r in records), (tmp_path, served)]:
        (folder / record["model"]).mkdir(parents=True)
        (folder / record["model"] / "metrics.json").write_text(json.dumps({"carried_state": record}))
    # A run that records its training: its steps, and its seed from the config it names.
    configs = tmp_path / "configs"
    configs.mkdir()
    config = json.loads((REPO_ROOT / "training" / "configs" / "lm_seg50_20m_rmt1.json").read_text())
    config["train"]["seed"] = 3
    (configs / "lm_seg50_20m_rmt1.json").write_text(json.dumps(config))
    rmt1_served = tmp_path / "rmt1_served" / "metrics.json"
    rmt1_served.write_text(
        json.dumps({"carried_state": served, "train": {"steps": 1900, "config": "lm_seg50_20m_rmt1"}})
    )
    (tmp_path / "segment_lm" / "lm_seg50_baseline").mkdir()  # a run without a record is left out
    (tmp_path / "segment_lm" / "lm_seg50_baseline" / "metrics.json").write_text(json.dumps({"perplexity": {}}))
    lines = render_carried_state(tmp_path, configs).split("\n")
    assert lines[0].startswith("### Carried state")
    rows = [line for line in lines if line.startswith("| ") and "---" not in line]
    assert rows == [
        "| run | model | carried state removed | training steps | seed | ppl as trained | ppl removed | Δ [95% CI] "
        "| tokens scored | articles |",
        "| lm_seg50_xl10 | Transformer-XL, cache 10 | no cache | - | - | 251.7 | 258.2 | +6.54 [+5.10, +8.00] | 41,918 "
        "| 120 |",
        "| lm_seg50_xl50 | Transformer-XL, cache 50 | no cache | - | - | 253.7 | 261.3 | +7.60 [+6.01, +9.30] | 41,918 "
        "| 120 |",
        "| lm_seg50_rmt1 | RMT, memory 1 | memory reset at every segment | - | - | 259.7 | 260.2 "
        "| +0.53 [+0.31, +0.76] | 41,918 | 120 |",
        "| rmt1_served | RMT, memory 1 | memory reset at every segment | 1900 | 3 | 129.6 | 132.7 "
        "| +3.10 [+2.33, +3.79] | 41,918 | 120 |",
    ]
    paragraph = lines[2]
    assert "first 120 enwiki validation articles (a stream of 42,042 tokens, 41,918 of them scored" in paragraph
    assert "windows of 250 tokens advancing by 125" in paragraph and "2,000 paired resamplings" in paragraph


def test_render_without_records_says_so(tmp_path):
    assert "No carried-state measurements yet" in render_carried_state(tmp_path, tmp_path)


def test_the_pretrained_memory_section_states_the_carried_models_study(tmp_path):
    """training.report.pretrained_memory reads the served carried model's record from its metrics.json."""
    from training.report.pretrained_memory import ENWIKI_MEMORY, enwiki_memory_table

    study = fixture_record(ENWIKI_MEMORY, 10, 0, (81.536, 89.432), (7.896, 7.05, 8.764))
    metrics = {
        "perplexity": {"enwiki_val": 81.5, "wikitext103_test": 95.31},
        "word_perplexity": {"enwiki_val": 1203.4},
        "train": {"steps": 1000},
        "carried_state": study,
    }
    (tmp_path / ENWIKI_MEMORY).mkdir()
    (tmp_path / ENWIKI_MEMORY / "metrics.json").write_text(json.dumps(metrics))
    text = "\n".join(enwiki_memory_table(tmp_path))
    assert "| memory carried (gpt2_enwiki_memory10) | 81.5 | 95.3 | 1203 | 1,000 |" in text
    assert (
        "The carried model on the first 120 enwiki validation articles (41,918 tokens, windows of 250): perplexity "
        "81.54 with its memory, 89.43 with the memory reset to its initial value at every segment: "
        f"Δ {89.432 - 81.536:+.2f} [+7.05, +8.76] (95% interval, 2,000 paired resamplings of the articles, "
        "seed 0)." in text
    )
    del metrics["carried_state"]
    (tmp_path / ENWIKI_MEMORY / "metrics.json").write_text(json.dumps(metrics))
    assert "The carried model on the first" not in "\n".join(enwiki_memory_table(tmp_path))
