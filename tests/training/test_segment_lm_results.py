"""The language-model table of paper 002 in docs/results.md, rendered from
run folders (config.json + metrics.json) and their training configs."""

from __future__ import annotations

import json
import math
from pathlib import Path

from training.report.segment_lm import segment_lm_section

ARTICLE_TOKENS = [100, 80, 120, 90, 110, 70]


def write_run(
    root: Path,
    name: str,
    memory: int,
    cache: int,
    test_rates: list[float],
    val_rates: list[float],
    steps: int = 30,
    served_from: str | None = None,
) -> None:
    """A finished run of `steps` steps whose articles cost `test_rates` (WikiText-103 test) and `val_rates`
    (enwiki val) nats per token; `served_from`: a served model at checkpoints/<name> trained from that config."""
    folder = root / "checkpoints" / name if served_from else root / "checkpoints" / "segment_lm" / name
    folder.mkdir(parents=True)
    model = {"family": "recurrent_memory", "d_model": 32, "d_ff": 64, "n_heads": 2, "n_layers": 2,
             "segment_length": 10, "memory_size": memory, "cache_length": cache, "bptt_depth": -1}  # fmt: skip
    (folder / "config.json").write_text(json.dumps({"model": {**model, "vocab_size": 80}}))
    splits = {
        split: {"documents": {"nll": [r * t for r, t in zip(rates, ARTICLE_TOKENS)], "tokens": ARTICLE_TOKENS}}
        for split, rates in (("wikitext103_test", test_rates), ("enwiki_val", val_rates))
    }
    metrics = {
        "perplexity": {"enwiki_val": 50.0, "wikitext103_test": 60.0 - memory},
        "word_perplexity": {"enwiki_val": 400.0, "wikitext103_test": 700.0},
        "perplexity_counts": {"context": 40, "stride": 20, "splits": splits},
        "train": {"steps": steps, "seconds": 600.0, **({"config": served_from} if served_from else {})},
    }
    (folder / "metrics.json").write_text(json.dumps(metrics))
    config = {"name": served_from or name, "model": model, "data": {"dataset": "enwiki", "max_len": 40},
              "train": {"batch_size": 4, "seed": 3}}  # fmt: skip
    (root / "configs").mkdir(exist_ok=True)
    (root / "configs" / f"{served_from or name}.json").write_text(json.dumps(config))


def interval(cell: str) -> list[float]:
    """The [low, high] of a "+d [low, high]" cell."""
    return [float(v) for v in cell.split("[")[1].rstrip("]").split(", ")]


def test_rows_come_baseline_first_with_the_difference_and_its_interval(tmp_path):
    write_run(tmp_path, "lm_rmt10", 10, 0, [4.0] * 6, [4.2] * 6)  # test: 0.2 nats per token better on every article
    write_run(tmp_path, "lm_base", 0, 0, [4.2] * 6, [4.2] * 6)
    write_run(tmp_path, "lm_xl50", 0, 50, [4.5, 3.9] * 3, [4.4] * 6)  # test: better on half, worse on half
    lines = segment_lm_section(tmp_path / "checkpoints", tmp_path / "configs")
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert [row.split(" | ")[0] for row in rows] == ["| no memory", "| Transformer-XL, cache 50", "| RMT, memory 10"]
    base, xl, rmt = (row.split(" | ") for row in rows)
    assert base[2] == base[4] == "-" and base[6] == "39.05"  # no difference from itself; the paper's baseline
    assert rmt[6] == "26.37" and xl[6] == "26.54"
    assert rmt[2].startswith("+0.0") and interval(xl[2])[0] > 0  # enwiki val: the same, and worse everywhere
    low, high = interval(rmt[4])
    assert low <= high < 0  # the same gain on every test article: the interval excludes zero
    low, high = interval(xl[4])
    assert low < 0 < high
    assert rows[2].endswith("| 30 | 4,800 | 3 | 10 |")  # steps, 30 x 4 blocks of 40 tokens, seed, minutes
    assert any("windows of 40 tokens advancing by 20" in line for line in lines)


def test_no_runs_say_so(tmp_path):
    assert "No segment language-model runs yet" in "\n".join(segment_lm_section(tmp_path, tmp_path))


def test_each_run_is_set_against_the_baseline_trained_on_as_many_tokens(tmp_path):
    write_run(tmp_path, "lm_base", 0, 0, [4.2] * 6, [4.2] * 6)  # 30 steps
    write_run(tmp_path, "lm_rmt10", 10, 0, [4.0] * 6, [4.2] * 6)
    write_run(tmp_path, "lm_long_base_90steps", 0, 0, [3.0] * 6, [3.0] * 6, steps=90, served_from="lm_long_base")
    write_run(tmp_path, "rmt10_served", 10, 0, [3.1] * 6, [3.0] * 6, steps=90, served_from="lm_long_rmt10")
    write_run(tmp_path, "lm_xl50_60", 0, 50, [4.0] * 6, [4.0] * 6, steps=60)  # no baseline at 60 steps
    (tmp_path / "checkpoints" / "rmt_copy").mkdir()  # a served model that is no segment language model
    (tmp_path / "checkpoints" / "rmt_copy" / "config.json").write_text(json.dumps({"model": {"segment_length": 8}}))
    (tmp_path / "checkpoints" / "rmt_copy" / "metrics.json").write_text(json.dumps({"test": {}}))
    lines = segment_lm_section(tmp_path / "checkpoints", tmp_path / "configs")
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert [(row[0], row[8]) for row in rows] == [  # by training tokens (steps x 4 blocks x 40), baseline first
        ("| no memory", "4,800"),
        ("| RMT, memory 10", "4,800"),
        ("| Transformer-XL, cache 50", "9,600"),
        ("| no memory", "14,400"),
        ("| RMT, memory 10", "14,400"),
    ]
    rmt_short, xl, rmt_long = rows[1], rows[2], rows[4]
    # exp(mean nll) - exp(baseline mean nll) on WikiText-103 test: each against its own budget's baseline
    assert rmt_short[4].startswith(f"{math.exp(4.0) - math.exp(4.2):+.2f} [")
    assert rmt_long[4].startswith(f"{math.exp(3.1) - math.exp(3.0):+.2f} [")
    assert xl[2] == xl[4] == "-"  # no baseline trained on 9,600 tokens


def test_the_variants_are_paired_against_each_other_at_each_budget(tmp_path):
    write_run(tmp_path, "lm_base", 0, 0, [4.2] * 6, [4.2] * 6)
    write_run(tmp_path, "lm_rmt1", 1, 0, [4.1] * 6, [4.0] * 6)
    write_run(tmp_path, "lm_rmt10", 10, 0, [4.0, 4.2] * 3, [4.1] * 6)
    write_run(tmp_path, "lm_xl10", 0, 10, [3.9] * 6, [4.0] * 6)
    write_run(tmp_path, "lm_rmt5_60", 5, 0, [3.0] * 6, [3.0] * 6, steps=60)  # alone at its budget: no pair
    lines = segment_lm_section(tmp_path / "checkpoints", tmp_path / "configs")
    start = next(i for i, line in enumerate(lines) if line.startswith("| train tokens | model | against"))
    rows = [line.split(" | ") for line in lines[start + 2 :] if line.startswith("| ")]
    assert [(row[0], row[1], row[2]) for row in rows] == [
        ("| 4,800", "RMT, memory 10", "RMT, memory 1"),
        ("| 4,800", "RMT, memory 10", "Transformer-XL, cache 10"),
    ]
    larger_memory, against_cache = rows
    # enwiki val: exp(4.1) - exp(4.0) on every article, so the interval is that one value
    gap = f"{math.exp(4.1) - math.exp(4.0):+.2f}"
    assert larger_memory[3] == f"{gap} [{gap}, {gap}]"
    # WT-103 test: token-weighted mean nll of RMT 10 (articles 4.0, 4.2 alternating) against 3.9 everywhere
    tokens = ARTICLE_TOKENS
    rmt10_nll = sum(r * t for r, t in zip([4.0, 4.2] * 3, tokens)) / sum(tokens)
    assert against_cache[4].startswith(f"{math.exp(rmt10_nll) - math.exp(3.9):+.2f} [")
    assert interval(against_cache[4])[0] > 0  # worse than the cache on every article
    assert larger_memory[5] == f"{26.37 - 28.71:+.2f} |" and against_cache[5] == f"{26.37 - 28.98:+.2f} |"


def test_a_longer_cache_is_set_against_every_shorter_one(tmp_path):
    write_run(tmp_path, "lm_base", 0, 0, [4.2] * 6, [4.2] * 6)
    write_run(tmp_path, "lm_xl10", 0, 10, [4.0] * 6, [4.1] * 6)
    write_run(tmp_path, "lm_xl50", 0, 50, [3.8] * 6, [4.1, 3.9] * 3)
    lines = segment_lm_section(tmp_path / "checkpoints", tmp_path / "configs")
    start = next(i for i, line in enumerate(lines) if line.startswith("| train tokens | model | against"))
    (row,) = [line.split(" | ") for line in lines[start + 2 :] if line.startswith("| ")]
    assert (row[1], row[2]) == ("Transformer-XL, cache 50", "Transformer-XL, cache 10")
    gap = f"{math.exp(3.8) - math.exp(4.0):+.2f}"  # WT-103 test: 0.2 nats lower on every article
    assert row[4] == f"{gap} [{gap}, {gap}]"
    val_nll = sum(r * t for r, t in zip([4.1, 3.9] * 3, ARTICLE_TOKENS)) / sum(ARTICLE_TOKENS)
    assert row[3].startswith(f"{math.exp(val_nll) - math.exp(4.1):+.2f} [")
    assert row[5] == f"{26.54 - 28.98:+.2f} |"


def test_a_served_copy_of_a_run_is_counted_once(tmp_path):
    """The app serves a run's weights in float16 from checkpoints/<name> while its record stays in segment_lm/: one
    row, the run's, as long as the served folder records the same training config and steps; another length of the
    same config is another run."""
    write_run(tmp_path, "lm_base", 0, 0, [4.2] * 6, [4.2] * 6)
    write_run(tmp_path, "lm_rmt10", 10, 0, [4.0] * 6, [4.2] * 6)  # its record, 30 steps of lm_rmt10
    write_run(tmp_path, "rmt10_served", 10, 0, [4.0] * 6, [4.2] * 6, served_from="lm_rmt10")  # the same run, served
    write_run(tmp_path, "rmt10_served_60steps", 10, 0, [3.9] * 6, [4.1] * 6, steps=60, served_from="lm_rmt10")
    lines = segment_lm_section(tmp_path / "checkpoints", tmp_path / "configs")
    rows = [line.split(" | ") for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert [(row[0], row[8]) for row in rows] == [("| no memory", "4,800"), ("| RMT, memory 10", "4,800"),
                                                  ("| RMT, memory 10", "9,600")]  # fmt: skip
