"""Command line: `python -m training train CONFIG.json`,
`python -m training lesion CHECKPOINT_DIR`, `python -m training store-half
CHECKPOINT_DIR ...`, `python -m training outputs CHECKPOINT_DIR ...`, `python -m training ff-memories CHECKPOINT_DIR`,
`python -m training memory-examples`, `python -m training segment-task`,
`python -m training batch CONFIG ... --deadline S --pack DIR` and `python -m training results`.
`main(argv)` is the entry point, so the project's `memlens` command can
delegate to it. Each command imports what it runs (torch among it) only
when it runs, so `--help` answers at once."""

from __future__ import annotations

import argparse
import math
import sys
from typing import get_args

from inference.core.places import DATA_DIR_ENV, REPO_ROOT
from training.commands import (
    active_memory_compare_command,
    algorithmic_task_command,
    batch_command,
    carried_state_command,
    ff_command,
    lesion_command,
    memory_command,
    memory_examples_command,
    memory_probe_command,
    outputs_command,
    results_command,
    segment_task_command,
    store_half_command,
    train_command,
)
from training.tasks.neural_gpu_tasks import Task as AlgorithmicTask
from training.tasks.rmt_tasks import Task as SegmentTask


def user_errors() -> tuple[type[Exception], ...]:
    """Problems the user can fix (a path, a config key): reported in one line, no traceback."""
    from inference.core.checkpoint import CheckpointError
    from training.data.translation import DataError
    from training.loop.config import ConfigError
    from training.loop.device_batch import BatchError
    from training.loop.run_dir import RunDirError

    return ConfigError, DataError, CheckpointError, RunDirError, BatchError


def add_data_and_device(command: argparse.ArgumentParser, data: str = "shared data folder") -> None:
    command.add_argument("--data-dir", help=f"{data} (default: ${DATA_DIR_ENV}, else ../shared/data)")
    command.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda or cuda:N")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training",
        description="Train and evaluate the memory models (Multi30k de-en, OPUS-MT ru-en) "
        "and the language model (enwiki, WikiText).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_commands(commands)
    add_study_commands(commands)
    add_task_commands(commands)
    add_batch_and_report_commands(commands)
    return parser


def add_run_commands(commands: argparse._SubParsersAction) -> None:
    """Train a config, and re-measure a finished checkpoint: lesion table, memory content, float16, outputs."""
    train = commands.add_parser(
        "train", help="train (or resume) a model from a JSON config and write its checkpoint folder"
    )
    train.add_argument("config", help="training config, e.g. training/configs/memtransformer_10.json")
    add_data_and_device(train, "shared data folder holding multi30k/, enwiki/, ...")
    train.add_argument("--out", help="checkpoint folder to write (default: checkpoints/<name>)")
    train.add_argument("--run-dir", help="folder for resumable state and the log (default: runs/<name>)")
    train.add_argument(
        "--seed",
        type=int,
        help="train the config under this seed instead (named <name>_seed<K>; "
        "default --out checkpoints/seeds/<name>/seed_<K>)",
    )
    train.add_argument(
        "--max-steps",
        type=int,
        help="stop after this many optimiser steps in the run (smoke runs); rerun with more to continue",
    )
    train.add_argument(
        "--pause",
        action="store_true",
        help="with --max-steps: stop there with only the resumable state saved, neither evaluating nor writing the "
        "checkpoint folder (a run that finishes before still does both)",
    )
    train.set_defaults(handler=train_command)

    lesion = commands.add_parser(
        "lesion", help="recompute a checkpoint's memory-size lesion table on test_2016_flickr into its metrics.json"
    )
    lesion.add_argument("checkpoint", help="checkpoint folder, e.g. checkpoints/memtransformer_10")
    add_data_and_device(lesion, "shared data folder holding multi30k/")
    lesion.set_defaults(handler=lesion_command)

    memory = commands.add_parser(
        "memory-analysis",
        help="the memory-content study of a working-memory checkpoint, per domain, into its memory_analysis.json "
        "(its translations under each condition into memory_analysis_outputs.json.gz)",
    )
    memory.add_argument("checkpoint", help="checkpoint folder, e.g. checkpoints/working_memory_ru_en")
    add_data_and_device(memory)
    memory.add_argument(
        "--max-sentences", type=int, default=1000, help="sentences per domain (the first ones of each test set)"
    )
    memory.set_defaults(handler=memory_command)

    half = commands.add_parser(
        "store-half",
        help="store checkpoints' weights in float16 and re-measure their metrics.json (all but train) "
        "on the stored weights",
    )
    half.add_argument(
        "checkpoints", nargs="+", help="checkpoint folders, e.g. checkpoints/transformer; converted one after the other"
    )
    add_data_and_device(half)
    half.set_defaults(handler=store_half_command)

    outputs = commands.add_parser(
        "outputs",
        help="translate checkpoints' headline test split as trained and under each lesion the results tables "
        "compare, into their outputs.json.gz (the tables and their bootstrap intervals are computed from these)",
    )
    outputs.add_argument("checkpoints", nargs="+", help="translation checkpoint folders, e.g. checkpoints/transformer")
    add_data_and_device(outputs)
    outputs.set_defaults(handler=outputs_command)


def add_study_commands(commands: argparse._SubParsersAction) -> None:
    """Studies of a trained model that the app reads: FF-key triggers, working-memory examples."""
    ff = commands.add_parser(
        "ff-memories",
        help="mine FF-key trigger examples and write a checkpoint's ff_triggers.json.gz and ff_analysis.json "
        "(agreement, aggregation)",
    )
    ff.add_argument(
        "checkpoint", help="checkpoint folder, e.g. checkpoints/language_model or checkpoints/memtransformer_20"
    )
    add_data_and_device(ff)
    ff.add_argument(
        "--sentences",
        type=int,
        default=50_000,
        help="corpus sentences to mine "
        "(language model: a seeded sample of enwiki train; translation: the first training pairs)",
    )
    ff.add_argument(
        "--eval-sentences", type=int, default=2_000, help="held-out sentences the aggregation is measured on"
    )
    ff.add_argument("--batch-size", type=int, default=64)
    ff.add_argument("--top-k", type=int, default=50, help="trigger examples kept per key")
    ff.add_argument(
        "--run-dir",
        help="folder of the resumable mining state (default: runs/ff_study/<checkpoint name>); rerun to resume",
    )
    ff.set_defaults(handler=ff_command)

    examples = commands.add_parser(
        "memory-examples",
        help="measure which validation sentences make each working-memory checkpoint write memory "
        "and store the Working memory page's example sentences (app/data/memory_examples.json)",
        add_help=False,
    )
    examples.add_argument("rest", nargs=argparse.REMAINDER)
    examples.set_defaults(handler=memory_examples_command)


def add_task_commands(commands: argparse._SubParsersAction) -> None:
    """The algorithmic task runs of papers 001 and 002, and their studies."""
    task = commands.add_parser(
        "segment-task",
        help="train (or resume) an RMT, Transformer-XL or no-memory decoder on one of paper 002's algorithmic tasks",
    )
    task.add_argument("--task", required=True, choices=get_args(SegmentTask))
    task.add_argument("--segments", type=int, required=True, help="segments the task's stream is cut into")
    task.add_argument(
        "--carry",
        required=True,
        choices=["rmt", "xl", "none", "reset"],
        help="memory tokens, cache or nothing; with --base: rmt (carried) or reset (memory reset at every segment)",
    )
    task.add_argument(
        "--base", help="a Hugging Face causal LM's folder to add the memory to (e.g. checkpoints/gpt2_enwiki)"
    )
    task.add_argument("--learning-rate", type=float, default=1e-3, help="Adam's learning rate (default 1e-3)")
    task.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda or cuda:N")
    task.add_argument("--seed", type=int, default=1)
    task.add_argument("--steps", type=int, default=2000)
    task.add_argument("--memory", type=int, default=8,
                      help="memory tokens (rmt) or cache length (xl); named in the run's name where not 8")  # fmt: skip
    task.add_argument("--batch-size", type=int, default=32)
    task.add_argument("--out", help="checkpoint folder (default: checkpoints/tasks/<name>)")
    task.add_argument("--run-dir", help="resumable state (default: runs/<name>)")
    task.set_defaults(handler=segment_task_command)

    algorithmic = commands.add_parser(
        "algorithmic-task",
        help="train (or resume) a Neural GPU or the GRU + attention baseline on one of paper 001's algorithmic tasks "
        "with a length curriculum, and test it at 1-10x the longest training length",
    )
    algorithmic.add_argument("--task", required=True, choices=get_args(AlgorithmicTask))
    algorithmic.add_argument("--model", required=True, choices=["neural_gpu", "gru_attention"])
    algorithmic.add_argument("--seed", type=int, default=1)
    algorithmic.add_argument("--steps", type=int, default=3000)
    algorithmic.add_argument("--max-length", type=int, default=8, help="longest training length")
    algorithmic.add_argument("--maps", type=int, default=24, help="state depth (the GRU's hidden size is twice it)")
    algorithmic.add_argument("--batch-size", type=int, default=32)
    algorithmic.add_argument("--dropout", type=float, default=0.05, help="dropout on the Neural GPU's state")
    algorithmic.add_argument(
        "--relaxed-sets",
        type=int,
        default=1,
        help="Neural GPU: train r sets of the recurrence's weights, step t using set t mod r, pulled together and "
        "averaged into one for validation, test and checkpoint (1: shared throughout)",
    )
    algorithmic.add_argument("--eval-every", type=int, default=250, help="steps between validations")
    algorithmic.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda or cuda:N")
    algorithmic.add_argument("--out", help="checkpoint folder (default: checkpoints/<model>_<task>)")
    algorithmic.add_argument("--run-dir", help="resumable state (default: runs/<name>)")
    algorithmic.set_defaults(handler=algorithmic_task_command)

    probe = commands.add_parser(
        "memory-probe",
        help="fit linear probes reading each source symbol from an RMT task checkpoint's memory after each segment; "
        "stores the held-out accuracies in its metrics.json (the Segments page shows them)",
    )
    probe.add_argument("checkpoint", help="a task checkpoint with memory tokens, e.g. checkpoints/rmt_copy")
    probe.add_argument("--train", type=int, default=1000, help="samples to fit on (task train split)")
    probe.add_argument("--validation", type=int, default=250, help="samples choosing the L2 strength (val split)")
    probe.add_argument("--test", type=int, default=500, help="samples scored (test split)")
    probe.set_defaults(handler=memory_probe_command)

    compare = commands.add_parser(
        "active-memory-compare",
        help="translate test_2016_flickr with paper 001's translation models (Neural GPU, Markovian, Extended, "
        "GRU + attention) and store BLEU, chrF, length ratio, BLEU by source length and the bootstrap intervals "
        "in checkpoints/active_memory_translation/comparison.json",
    )
    compare.add_argument("--checkpoints", default=str(REPO_ROOT / "checkpoints"))
    compare.add_argument("--data-dir", help=f"shared data folder (default: ${DATA_DIR_ENV}, else ../shared/data)")
    compare.set_defaults(handler=active_memory_compare_command)
    carried = commands.add_parser(
        "carried-state",
        help="score segment language models with and without the state they carry from segment to segment "
        '(RMT memory reset, Transformer-XL cache dropped), into each folder\'s metrics.json ("carried_state")',
    )
    carried.add_argument("checkpoints", nargs="+", help="segment language-model checkpoint folders")
    carried.add_argument("--articles", type=positive_integer, default=120, help="first enwiki validation articles")
    add_data_and_device(carried)
    carried.set_defaults(handler=carried_state_command)


def add_batch_and_report_commands(commands: argparse._SubParsersAction) -> None:
    """A GPU batch of runs, and docs/results.md."""
    batch = commands.add_parser(
        "batch",
        help="train configs side by side until a hard deadline (a lent GPU), store each finished run in float16 "
        "with its test outputs, and pack them (and, while room is left, the state of the runs stopped at the "
        "deadline) into archives small enough to copy back",
    )
    batch.add_argument("jobs", nargs="+", help="training configs; CONFIG@K trains CONFIG under seed K")
    add_data_and_device(batch)
    batch.add_argument(
        "--deadline", type=positive_number, required=True, help="seconds after which the runs still going are stopped"
    )
    batch.add_argument("--pack", required=True, help="folder for the archives, e.g. $OUT")
    batch.add_argument("--work", default=str(REPO_ROOT / "runs" / "batch"), help="folder of the runs and their logs")
    batch.add_argument("--archive-mb", type=positive_number, default=15.0, help="size limit of one archive")
    batch.add_argument(
        "--archives",
        type=positive_integer,
        default=7,
        help="archives at most, checkpoints and the pieces of stopped runs together (records.tar.gz aside)",
    )
    batch.set_defaults(handler=batch_command)

    results = commands.add_parser(
        "results", help="regenerate docs/results.md from the checkpoints' metrics.json and stored test outputs"
    )
    results.add_argument("--checkpoints", default=str(REPO_ROOT / "checkpoints"))
    results.add_argument("--out", default=str(REPO_ROOT / "docs" / "results.md"))
    results.add_argument(
        "--reading",
        default=str(REPO_ROOT / "docs" / "results_reading.md"),
        help="the prose reading of the tables, kept by hand",
    )
    results.add_argument(
        "--data-dir", help="shared data folder: the references of the stored test outputs (default as for training)"
    )
    results.set_defaults(handler=results_command)


def positive_number(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive finite number")
    return value


def positive_integer(text: str) -> int:
    if not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except user_errors() as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
