"""The Neural GPU benchmark's own logic: the growth rate it fits, the work
both models do per sequence, and its printed table on tiny lengths."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.neural_gpu import describe_growth, fresh_contender, growth_exponent, reverse_batch

REPO_ROOT = Path(__file__).parents[2]
CPU = torch.device("cpu")


def test_the_growth_rate_is_the_slope_of_log_time_against_log_length():
    lengths = [8, 16, 32, 64]
    assert growth_exponent(lengths, [3 * n**2 for n in lengths]) == pytest.approx(2.0)
    assert growth_exponent(lengths, [0.5 * n for n in lengths]) == pytest.approx(1.0)
    # least squares, not the end points' slope (4/3): log2 lengths 3..6 against log2 times 0, 2, 2, 4
    # (deviations -1.5, -0.5, 0.5, 1.5 and -2, 0, 0, 2): (3 + 3) / (2.25 + 0.25 + 0.25 + 2.25) = 1.2
    assert growth_exponent(lengths, [1, 4, 4, 16]) == pytest.approx(1.2)
    assert growth_exponent([8, 16], [1.0, 2.8]) == pytest.approx(math.log2(2.8))


def test_the_growth_rate_needs_two_lengths():
    with pytest.raises(ValueError, match="two different lengths"):
        growth_exponent([8, 8], [1.0, 2.0])


def test_the_growth_is_described_over_all_lengths_and_the_last_two():
    line = describe_growth("Neural GPU", [8, 16, 32], [1.0, 4.0, 8.0])
    assert line == "Neural GPU: time ∝ length^1.50 (fit over 8..32), ^1.00 from 16 to 32"
    assert (
        describe_growth("GRU + attention", [4, 8], [1.0, 2.0]) == "GRU + attention: time ∝ length^1.00 (fit over 4..8)"
    )


@pytest.mark.parametrize("name", ["neural_gpu", "gru_attention"])
def test_both_models_read_n_bits_and_eos_and_write_n_plus_one_tokens(name):
    contender = fresh_contender(name, CPU)
    src_ids, tgt_in = reverse_batch(contender.tokenizer, 6, 2, CPU)
    assert src_ids.shape == tgt_in.shape == (2, 7)
    assert (src_ids[:, -1] == contender.tokenizer.eos_id).all() and (tgt_in[:, 0] == contender.tokenizer.bos_id).all()
    bits = [contender.tokenizer.decode(row.tolist()) for row in src_ids]
    assert [contender.tokenizer.decode(row.tolist()) for row in tgt_in] == [b[::-1] for b in bits]
    assert all(set(b) <= {"0", "1"} and len(b) == 6 for b in bits)
    with torch.no_grad():
        assert contender.decode(src_ids, tgt_in).shape == (2, 7)


def test_the_benchmark_prints_a_row_per_length_and_each_models_growth_from_its_times():
    done = subprocess.run(
        [sys.executable, "benchmarks/neural_gpu.py", "--lengths", "8", "4", "--repeats", "1"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=os.environ | {"PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^\s*(\d+) \|\s+([\d.]+)\s+([\d.]+) \|\s+([\d.]+)$", done.stdout, re.MULTILINE)
    assert [row[0] for row in rows] == ["4", "8"]
    ngpu, gru = ([float(row[i]) for row in rows] for i in (1, 2))
    for _, a, b, ratio in rows:
        assert float(ratio) == pytest.approx(float(a) / float(b), abs=0.01)
    growth = r"^(Neural GPU|GRU \+ attention): time ∝ length\^(-?[\d.]+) \(fit over 4..8\)$"
    printed = dict(re.findall(growth, done.stdout, re.MULTILINE))
    assert float(printed["Neural GPU"]) == pytest.approx(math.log2(ngpu[1] / ngpu[0]), abs=0.02)
    assert float(printed["GRU + attention"]) == pytest.approx(math.log2(gru[1] / gru[0]), abs=0.02)


def test_the_benchmark_refuses_a_single_length():
    done = subprocess.run(
        [sys.executable, "benchmarks/neural_gpu.py", "--lengths", "8"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=os.environ | {"PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 2 and "at least two different lengths" in done.stderr
