"""The segments benchmark's own logic: where full attention starts to cost
more than RMT, the models it compares, and its CPU peak-memory reading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.segments import crossing, describe_crossing, variant_model

TOKENS = [64, 128, 256, 512]
REPO_ROOT = Path(__file__).parents[2]


def test_the_crossing_is_interpolated_on_log_log_axes():
    # ratio 0.8 at 128, 2.0 at 256: log ratio reaches 0 at 0.2435 of the way, 128 * 2**0.2435 = 151.54
    assert crossing(TOKENS, [0.5, 0.8, 2.0, 4.0]) == pytest.approx(151.54, abs=0.01)
    assert crossing(TOKENS, [0.5, 1.0, 2.0, 4.0]) == pytest.approx(128)


def test_the_crossing_is_where_full_attention_stays_dearer():
    assert crossing(TOKENS, [1.2, 0.5, 2.0, 4.0]) == pytest.approx(181.0, abs=0.1)  # the dip at 128 counts
    assert crossing(TOKENS, [0.5, 1.5, 0.9, 4.0]) > 256
    assert crossing(TOKENS, [0.5, 0.9, 1.2, 0.95]) is None
    assert crossing(TOKENS, [1.1, 2.0, 4.0, 8.0]) == 64


def test_the_crossing_is_described_in_words():
    assert "no crossing" in describe_crossing("time", TOKENS, [0.5, 0.9, 1.2, 0.95])
    assert "already costs more than RMT at 64 tokens" in describe_crossing("time", TOKENS, [1.1, 2.0, 4.0, 8.0])
    assert "from about 152 tokens" in describe_crossing("time", TOKENS, [0.5, 0.8, 2.0, 4.0])


def test_the_variants_share_the_rmt_weights_and_one_segment_is_full_attention():
    rmt, xl, full = (variant_model(v, 128) for v in ("rmt", "xl", "full"))
    assert (rmt.config.segment_length, xl.config.segment_length, full.config.segment_length) == (64, 64, 128)
    assert (xl.config.memory_size, xl.config.cache_length) == (0, 8)
    weights = rmt.state_dict()
    assert all(torch.equal(value, weights[name]) for name, value in full.state_dict().items())
    assert all(torch.equal(value, weights[name]) for name, value in xl.state_dict().items() if name != "memory_init")
    ids = torch.randint(3, 53, (2, 128))
    with torch.no_grad():
        torch.testing.assert_close(rmt(ids[:, :64]), full(ids[:, :64]))  # one segment: the same pass
        assert (rmt(ids)[:, 64:] - full(ids)[:, 64:]).abs().max() > 1e-3  # two segments: not the same


PEAK_PROBE = """
import torch
from benchmarks.segments import peak_mb

def touch_and_free():
    block = torch.ones(64 * 2**20 // 4)  # 64 MiB of float32, written, freed on return
    del block

earlier = torch.ones(128 * 2**20 // 4)  # an earlier, higher peak of this process must not count
del earlier
print(peak_mb(lambda: None, torch.device("cpu")), peak_mb(touch_and_free, torch.device("cpu")))
"""


def test_the_cpu_peak_sees_memory_freed_before_the_call_returns():
    # In a fresh process, as the benchmark measures every case: a long-lived process (this test run)
    # may already hold freed pages the allocation reuses, and then its resident size never grows.
    done = subprocess.run([sys.executable, "-c", PEAK_PROBE], capture_output=True, text=True, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    nothing, block = map(float, done.stdout.split())
    assert nothing < 4 and 60 < block < 80
