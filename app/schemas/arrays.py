"""Arrays in JSON responses."""

from __future__ import annotations

import base64

import numpy as np


def binary_array(array: np.ndarray) -> dict:
    """Plotly's binary array encoding: base64 of the raw little-endian bytes."""
    return {
        "dtype": "u1",
        "shape": list(array.shape),
        "bdata": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode(),
    }
