"""Arrays in JSON responses."""

from __future__ import annotations

import base64

import numpy as np
import torch
from pydantic import BaseModel

from app.figures.attention import quantize_percent


def binary_array(array: np.ndarray) -> dict:
    """Plotly's binary array encoding: base64 of the raw little-endian bytes."""
    return {
        "dtype": "u1",
        "shape": list(array.shape),
        "bdata": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode(),
    }


class BinaryWeights(BaseModel):
    """Plotly's binary array encoding: base64 of raw little-endian uint8, whole percent."""

    dtype: str
    shape: list[int]
    bdata: str
    unit: str


def percent_weights(weights: torch.Tensor) -> BinaryWeights:
    """Attention weights in [0, 1] as uint8 whole percent, in the binary encoding."""
    return BinaryWeights(**binary_array(quantize_percent(weights)), unit="percent")
