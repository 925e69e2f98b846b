"""What the studies that choose the app's example inputs share (memory_examples, opening_examples): their command
line, one torch thread (one sentence at a time, as a page runs it), and the JSON file they write."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from inference.core.places import CHECKPOINTS_DIR


def study_arguments(module: str, doc: str, out: Path, argv: list[str] | None) -> argparse.Namespace:
    """--checkpoints, --data-dir and --out of `python -m training.studies.<module>`; sets torch to one thread (a
    second only waits on a sentence at a time: 15x slower on a busy 2-core machine)."""
    parser = argparse.ArgumentParser(prog=f"python -m training.studies.{module}", description=doc.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=Path, default=CHECKPOINTS_DIR)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    return args


def write_study(out: Path, written: dict) -> dict:
    out.write_text(json.dumps(written, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return written
