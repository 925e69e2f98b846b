"""The run directory (runs/<name>/ by default, git-ignored): what a run
needs to be resumed by rerunning the same command.

    config.json     the TrainConfig the run started with; a rerun must match it
    tokenizer.json  the shared vocabulary, trained once
    state.pt        weights, optimiser, progress and RNG states
    best.pt         the weights of the epoch with the highest validation BLEU so far, with that epoch and step
    train.log       plain-text log

state.pt is written with torch.save and read with torch.load(weights_only=True),
so it holds tensors and plain types only (no pickled objects). It is written
to a temporary file and renamed, so an interrupted save never leaves a torn
file behind.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn
from tqdm import tqdm

from training.loop.config import TrainConfig


class RunDirError(Exception):
    """A run directory that does not belong to the requested run."""


@dataclass
class Progress:
    step: int = 0  # optimiser steps taken in this run
    epoch: int = 0  # epochs completed
    batch_in_epoch: int = 0  # batches of the current epoch already trained
    epoch_loss_sum: float = 0.0  # sum of per-token train losses in the current epoch
    epoch_tokens: int = 0  # target tokens in the current epoch so far
    seconds: float = 0.0  # training time, summed over resumed sessions
    loss_curve: list[float] = field(default_factory=list)  # mean train loss per completed epoch
    val_loss: list[float] = field(default_factory=list)  # validation loss per completed epoch
    val_bleu_epochs: list[int] = field(default_factory=list)  # epochs (1-based) with a validation BLEU
    val_bleu: list[float] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)  # the devices that trained it, in order (a run may move)

    def trained_on(self, device: torch.device) -> None:
        """Record that `device` trains the run from here on (an entry only where the device changes)."""
        if self.devices[-1:] != [device_name(device)]:
            self.devices.append(device_name(device))

    def best_val_epoch(self) -> int | None:
        """The first epoch with the highest validation BLEU; None before any was measured."""
        if not self.val_bleu:
            return None
        return self.val_bleu_epochs[self.val_bleu.index(max(self.val_bleu))]

    def train_record(self, device: torch.device, schedule_offset: int, selected: tuple[int, int] | None) -> dict:
        """metrics.json's "train" record: the run's length, time and loss curves, and the (epoch, step)
        whose weights the checkpoint holds (None: the last)."""
        selected_epoch, selected_step = selected or (self.epoch, self.step)
        return {
            "epochs": self.epoch,
            "steps": self.step,
            "selected_epoch": selected_epoch,  # chosen on validation BLEU; the checkpoint holds its weights
            "schedule_steps": schedule_offset
            + selected_step,  # where a run initialised from this checkpoint continues the lr schedule
            "seconds": round(self.seconds, 1),
            # the devices that trained the run; a state saved before they were recorded: where it is evaluated
            "device": " then ".join(self.devices) or device_name(device),
            "loss_curve": self.loss_curve,
            "val_loss": self.val_loss,
        }


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


class RunDir:
    def __init__(self, path: str | Path, config: TrainConfig):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.tokenizer_path = self.path / "tokenizer.json"
        self.state_path = self.path / "state.pt"
        self.best_path = self.path / "best.pt"
        self.log_path = self.path / "train.log"
        self._claim(config)

    def _claim(self, config: TrainConfig) -> None:
        """Record the config, or check that a resumed run uses the same one:
        continuing a run under a changed config would mix two experiments."""
        record = self.path / "config.json"
        wanted = json.loads(json.dumps(config.to_dict()))  # tuples -> lists, as stored
        if record.exists():
            stored = json.loads(record.read_text())
            if without_unset(stored) != without_unset(wanted):
                changed = sorted(key for key in wanted.keys() | stored.keys() if wanted.get(key) != stored.get(key))
                raise RunDirError(
                    f"{self.path} holds a run started with a different config (differs in: {', '.join(changed)}); "
                    "delete that folder or pass another --run-dir"
                )
        else:
            record.write_text(json.dumps(wanted, indent=2) + "\n")

    def log(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}"
        tqdm.write(line)
        with self.log_path.open("a") as log:
            log.write(line + "\n")

    def save_state(self, model: nn.Module, optimizer: torch.optim.Optimizer, progress: Progress) -> None:
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "progress": asdict(progress),
            "rng": {
                "torch": torch.get_rng_state(),  # dropout on CPU
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],  # dropout on GPU
            },
        }
        partial = self.state_path.with_name(self.state_path.name + ".partial")
        torch.save(state, partial)
        os.replace(partial, self.state_path)

    def save_best(self, model: nn.Module, progress: Progress) -> None:
        """Keep the model as it is after progress.epoch: the best on validation so far."""
        best = {"model": model.state_dict(), "epoch": progress.epoch, "step": progress.step}
        partial = self.best_path.with_name(self.best_path.name + ".partial")
        torch.save(best, partial)
        os.replace(partial, self.best_path)

    def load_best(self, model: nn.Module) -> tuple[int, int]:
        """Put the best-on-validation weights into `model`; returns (their epoch, their step)."""
        best = torch.load(self.best_path, map_location="cpu", weights_only=True)
        model.load_state_dict(best["model"])
        return best["epoch"], best["step"]

    def load_state(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> Progress | None:
        """Restore a saved run into `model` and `optimizer`; None if there is none."""
        if not self.state_path.exists():
            return None
        state = torch.load(self.state_path, map_location="cpu", weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])  # moves its tensors to the parameters' device
        torch.set_rng_state(state["rng"]["torch"])
        if torch.cuda.is_available() and state["rng"]["cuda"]:
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
        return Progress(**state["progress"])


def without_unset(config: dict) -> dict:
    """The config without its None settings: a run recorded before an
    optional key existed matches the same config read today."""
    return {
        key: without_unset(value) if isinstance(value, dict) else value
        for key, value in config.items()
        if value is not None
    }
