"""Attention payload size and preparation time: MemLens vs BertViz.

For one random 12-layer x 12-head attention tensor at N = 64, 128, 256
tokens, prints side by side:
  ours:    the /api/attention payload (weights as uint8 percent in Plotly's
           base64 binary encoding, tokens and roles as JSON), one layer per
           request as the app ships it, summed over all 12 layers;
  BertViz: model_view(..., html_action='return'), the whole HTML at once;
and the ratios. Goal: ours at least 30x smaller.

    pip install bertviz   # for this benchmark only
    python benchmarks/payload.py
"""

from __future__ import annotations

import json
import time

import torch

from app.figures.attention import quantize_percent
from app.schemas.arrays import binary_array

LAYERS, HEADS = 12, 12


def random_attention(n: int, seed: int = 0) -> torch.Tensor:  # [layers, heads, n, n]
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(LAYERS, HEADS, n, n, generator=generator).mul(3).softmax(dim=-1)


def our_payload(attention: torch.Tensor, tokens: list[str]) -> int:
    """Bytes of the JSON bodies of one /api/attention response per layer."""
    roles = ["src"] * len(tokens)
    total = 0
    for layer in range(attention.shape[0]):
        body = {
            "stack": "encoder.attn",
            "layer": layer,
            "translation": "",
            "query_tokens": tokens,
            "key_tokens": tokens,
            "query_roles": roles,
            "key_roles": roles,
            "weights": {**binary_array(quantize_percent(attention[layer])), "unit": "percent"},
        }
        total += len(json.dumps(body).encode())
    return total


def bertviz_payload(attention: torch.Tensor, tokens: list[str]) -> int:
    from bertviz import model_view

    # BertViz takes a tuple of [batch, heads, n, n] tensors, one per layer.
    html = model_view(tuple(layer.unsqueeze(0) for layer in attention), tokens, html_action="return")
    return len(html.data.encode())


def timed(fn, *args) -> tuple[int, float]:
    start = time.perf_counter()
    size = fn(*args)
    return size, time.perf_counter() - start


def main() -> None:
    print(f"{LAYERS} layers x {HEADS} heads, random attention; sizes in KiB, times in ms")
    print(
        f"{'N':>5} {'ours KiB':>10} {'ours ms':>9} {'BertViz KiB':>12} {'BertViz ms':>11} "
        f"{'size ratio':>11} {'time ratio':>11}"
    )
    for n in (64, 128, 256):
        attention = random_attention(n)
        tokens = [f"tok{i}" for i in range(n)]
        ours, ours_time = timed(our_payload, attention, tokens)
        theirs, theirs_time = timed(bertviz_payload, attention, tokens)
        print(
            f"{n:>5} {ours / 1024:>10.0f} {ours_time * 1e3:>9.0f} {theirs / 1024:>12.0f} {theirs_time * 1e3:>11.0f} "
            f"{theirs / ours:>10.1f}x {theirs_time / ours_time:>10.1f}x"
        )
    print("ratio = BertViz / ours (goal: size ratio >= 30)")


if __name__ == "__main__":
    main()
