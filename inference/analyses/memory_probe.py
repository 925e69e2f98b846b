"""Linear probes: how well a symbol can be read linearly from vectors.

Given features of samples ([n, d], or [n, slots, d]: one vector per memory
slot) and integer labels ([n, positions]: the symbol at every position of
the sample), fit one multinomial logistic regression per (slot, position),
and one per position on all slots concatenated, and score each on held-out
samples.

- Data: three parts of different samples. The probes are fit on `train`,
  their L2 strength is chosen per probe on `validation`, and their accuracy
  is measured on `test`, which plays no part in fitting or choosing.
- Features are standardised with the train part's mean and spread.
- Fit: full batch, Adam, from zero weights (the loss is convex, so the
  result depends on nothing random), `steps` steps per L2 candidate along
  the candidates from the strongest down, each starting where the last
  stopped. Every probe is fitted at once as one batched problem; the loss
  is a sum of the probes' own and Adam's steps are per weight, so this is
  the same as fitting each alone.
- Chance: the accuracy on `test` of always answering the train part's most
  frequent label at that position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

L2_CANDIDATES = (1e-1, 1e-2, 1e-3)  # weight penalty on the mean cross-entropy
STEPS, LEARNING_RATE = 100, 0.05  # Adam steps per L2 candidate


@dataclass(frozen=True)
class Labelled:
    """Samples of one part: features [n, d] or [n, slots, d], labels [n, positions] (integers >= 0)."""

    features: torch.Tensor
    labels: torch.Tensor

    def __post_init__(self):
        if self.features.dim() not in (2, 3):
            raise ValueError(f"features are [n, d] or [n, slots, d], got shape {tuple(self.features.shape)}")
        if self.labels.dim() != 2 or self.labels.shape[0] != self.features.shape[0]:
            raise ValueError(
                f"labels are [n, positions] for the {self.features.shape[0]} samples, got {tuple(self.labels.shape)}"
            )
        if self.features.shape[0] == 0:
            raise ValueError("a part holds at least one sample")
        if self.labels.dtype.is_floating_point or self.labels.min() < 0:
            raise ValueError("labels are integers at least 0")

    @property
    def slotted(self) -> torch.Tensor:  # [n, slots, d]
        return self.features if self.features.dim() == 3 else self.features[:, None]


@dataclass(frozen=True)
class ProbeAccuracy:
    """Held-out accuracy of the probes."""

    per_slot: np.ndarray  # [slot, position] reading one slot (one row for [n, d] features)
    all_slots: np.ndarray  # [position] reading every slot, concatenated
    chance: np.ndarray  # [position] always answering the train part's most frequent label
    l2_per_slot: np.ndarray  # [slot, position] the L2 strength chosen on validation
    l2_all_slots: np.ndarray  # [position]


def probe_accuracy(
    train: Labelled,
    validation: Labelled,
    test: Labelled,
    l2_candidates: Sequence[float] = L2_CANDIDATES,
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
) -> ProbeAccuracy:
    """Fit on `train`, choose L2 on `validation`, score on `test` (module doc)."""
    parts = (train, validation, test)
    if len({part.slotted.shape[1:] for part in parts}) != 1 or len({part.labels.shape[1] for part in parts}) != 1:
        raise ValueError("train, validation and test have the same slots, width and positions")
    if train.features.shape[0] < 2:
        raise ValueError("the train part holds at least two samples")
    if not l2_candidates or min(l2_candidates) < 0 or steps < 1:
        raise ValueError("at least one L2 candidate, none negative, and at least one step")
    classes = int(max(part.labels.max() for part in parts)) + 1
    mean, spread = train.slotted.mean(0), train.slotted.std(0).clamp_min(1e-6)  # [slots, d]
    slotted = [((part.slotted - mean) / spread).float() for part in parts]  # [n, slots, d] each
    one_each = [x.transpose(0, 1) for x in slotted]  # [slots, n, d]: a group per slot
    together = [x.flatten(1)[None] for x in slotted]  # [1, n, slots*d]: one group
    labels = [part.labels for part in parts]
    per_slot, l2_per_slot = _fit_and_score(one_each, labels, classes, l2_candidates, steps, learning_rate)
    all_slots, l2_all = _fit_and_score(together, labels, classes, l2_candidates, steps, learning_rate)
    majority = torch.mode(train.labels, dim=0).values  # [positions]
    chance = (test.labels == majority).float().mean(0)
    return ProbeAccuracy(per_slot.numpy(), all_slots[0].numpy(), chance.numpy(), l2_per_slot.numpy(), l2_all[0].numpy())


def _fit_and_score(
    features: list[torch.Tensor],  # train, validation, test: [groups, n, f] each
    labels: list[torch.Tensor],  # [n, positions] each
    classes: int,
    l2_candidates: Sequence[float],
    steps: int,
    learning_rate: float,
) -> tuple[torch.Tensor, torch.Tensor]:  # test accuracy [groups, positions], chosen L2 [groups, positions]
    """Fit a probe per (group, position) on train, along the L2 candidates from the
    strongest down, each fit starting from the last; per (group, position) keep the
    candidate best on validation (the stronger on a tie) and return its test accuracy."""
    train_x, train_y = features[0], labels[0]
    groups, n, width = train_x.shape
    positions = train_y.shape[1]
    weight = torch.zeros(groups, width, classes * positions, requires_grad=True)
    bias = torch.zeros(groups, 1, classes * positions, requires_grad=True)
    optimizer = torch.optim.Adam([weight, bias], lr=learning_rate)
    target = train_y.repeat(groups, 1)  # [groups*n, positions]

    def logits(x: torch.Tensor) -> torch.Tensor:  # [groups, n, f] -> [groups*n, classes, positions]
        return (x @ weight + bias).reshape(-1, classes, positions)

    best_validation = torch.full((groups, positions), -1.0)
    test_accuracy, chosen = torch.zeros(groups, positions), torch.zeros(groups, positions, dtype=torch.float64)
    for l2 in sorted(l2_candidates, reverse=True):
        with torch.enable_grad():
            for _ in range(steps):
                optimizer.zero_grad()
                cross_entropy = F.cross_entropy(logits(train_x), target, reduction="sum") / n  # summed over probes
                (cross_entropy + l2 * weight.square().sum()).backward()
                optimizer.step()
        with torch.no_grad():
            validation, test = (
                (logits(x).argmax(1).reshape(groups, -1, positions) == y).float().mean(1)  # [groups, positions]
                for x, y in zip(features[1:], labels[1:])
            )
        better = validation > best_validation
        best_validation = torch.where(better, validation, best_validation)
        test_accuracy = torch.where(better, test, test_accuracy)
        chosen = torch.where(better, l2, chosen)
    return test_accuracy, chosen
