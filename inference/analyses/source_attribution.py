"""What integrated gradients of a model's output onto its embedded source give (inference.runs.source_attribution
computes it): the data the Focus analyses read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceAttribution:
    source_tokens: list[str]  # the source as the encoder reads it, EOS included
    output_tokens: list[str]  # the model's greedy output, with its EOS unless it was cut at max_new_tokens
    integrated_gradients: list[list[float]]  # [outputs, sources]: signed, summed over the embedding's dimensions
    convergence_delta: float  # the largest |sum of a row's attributions - (f(source) - f(zero source))|
