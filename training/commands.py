"""What each `python -m training` command runs (training.cli parses the command line and calls one of
these). Each imports what it runs, torch among it, only when it runs, so `--help` answers at once."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from inference.core.places import REPO_ROOT


def train_command(args: argparse.Namespace) -> None:
    from training.loop.config import load_config
    from training.loop.seed_runs import seed_folder, seeded_config
    from training.loop.translation_run import run_training

    if args.pause and args.max_steps is None:
        raise SystemExit("--pause stops a run at --max-steps: give both")
    config, out = load_config(args.config), args.out
    if args.seed is not None:
        out = out or REPO_ROOT / "checkpoints" / seed_folder(config.name, args.seed)
        config = seeded_config(config, args.seed)
    folder = run_training(config, args.data_dir, out, args.run_dir, args.device, args.max_steps, args.pause)
    print(folder)


def batch_command(args: argparse.Namespace) -> None:
    from training.loop.device_batch import BatchError, parse_job, run_batch

    jobs = [parse_job(spec) for spec in args.jobs]
    data = ["--data-dir", str(Path(args.data_dir).resolve())] if args.data_dir else []
    options = ["--device", args.device, *data]  # the runs start in the repository's root
    limit = int(args.archive_mb * 1_000_000)
    if limit < 100_000:
        raise BatchError("--archive-mb must be at least 0.1")
    report = run_batch(jobs, Path(args.work), Path(args.pack), args.deadline, options, limit, args.archives)
    print(json.dumps(report, indent=1))


def lesion_command(args: argparse.Namespace) -> None:
    from training.loop.translation_run import recompute_lesion

    table = recompute_lesion(args.checkpoint, args.data_dir, args.device)
    print(json.dumps(table))


def memory_command(args: argparse.Namespace) -> None:
    from training.studies.memory_content import analyse_checkpoint

    print(analyse_checkpoint(args.checkpoint, args.data_dir, args.device, args.max_sentences))


def ff_command(args: argparse.Namespace) -> None:
    from training.studies.ff_keys import study_checkpoint

    for path in study_checkpoint(
        args.checkpoint,
        args.data_dir,
        args.device,
        args.sentences,
        args.eval_sentences,
        args.batch_size,
        args.top_k,
        args.run_dir,
    ):
        print(path)


def outputs_command(args: argparse.Namespace) -> None:
    from training.loop.translation_run import store_outputs

    for folder in args.checkpoints:
        print(store_outputs(folder, args.data_dir, args.device), flush=True)


def store_half_command(args: argparse.Namespace) -> None:
    from training.loop.translation_run import store_half

    for folder in args.checkpoints:
        old, new = store_half(folder, args.data_dir, args.device)
        print(f"{folder}: weights stored in float16; metrics re-measured on them")
        old_numbers = dict(numbers(old))
        for path, value in numbers(new):
            if not path.startswith("train."):
                print(f"  {path}: {old_numbers.get(path, '-')} -> {value}", flush=True)


def numbers(value, path: str = "") -> list[tuple[str, float]]:
    """(path, number) for every number in nested dicts and lists, e.g. ("lesion.bleu[2]", 25.1)."""
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in numbers(item, f"{path}.{key}" if path else key)]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in numbers(item, f"{path}[{i}]")]
    return [(path, value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def memory_examples_command(args: argparse.Namespace) -> None:
    from training.studies.memory_examples import main as memory_examples_main

    memory_examples_main(args.rest)


def segment_task_command(args: argparse.Namespace) -> None:
    from training.loop.segment_task_run import TaskRun, train_task

    run = TaskRun(
        args.task,
        args.segments,
        args.carry,
        args.seed,
        args.steps,
        args.batch_size,
        memory=args.memory,
        learning_rate=args.learning_rate,
        base=args.base,
    )
    out = Path(args.out) if args.out else REPO_ROOT / "checkpoints" / "tasks" / run.name
    train_task(run, out, Path(args.run_dir) if args.run_dir else REPO_ROOT / "runs" / run.name, device=args.device)


def algorithmic_task_command(args: argparse.Namespace) -> None:
    from training.loop.neural_gpu_task_run import AlgorithmicRun, train_algorithmic

    run = AlgorithmicRun(
        args.task,
        args.model,
        args.seed,
        args.steps,
        max_length=args.max_length,
        batch_size=args.batch_size,
        maps=args.maps,
        dropout=args.dropout,
        relaxed_sets=args.relaxed_sets,
        eval_every=args.eval_every,
    )
    out = Path(args.out) if args.out else REPO_ROOT / "checkpoints" / f"{run.model}_{run.task}"
    run_dir = Path(args.run_dir) if args.run_dir else REPO_ROOT / "runs" / run.name
    train_algorithmic(run, out, run_dir, device=args.device)


def memory_probe_command(args: argparse.Namespace) -> None:
    import time

    from inference.core.checkpoint import MEMORY_PROBE_KEY, CheckpointError, load_checkpoint, store_study
    from training.studies.memory_probe import probe_memory, probe_record

    folder = Path(args.checkpoint)
    loaded = load_checkpoint(folder, "cpu")
    began = time.monotonic()
    try:
        probe = probe_memory(loaded, args.train, args.validation, args.test)
    except ValueError as error:
        raise CheckpointError(str(error)) from None
    store_study(folder, MEMORY_PROBE_KEY, probe_record(probe, time.monotonic() - began))
    best = probe.best_slot.max(axis=0)  # [position] best slot after any segment
    print(f"{folder.name}: best single-slot accuracy per source position {[round(float(x), 2) for x in best]}")


def active_memory_compare_command(args: argparse.Namespace) -> None:
    from training.evaluation.active_memory_comparison import measure_translation

    measure_translation(Path(args.checkpoints), REPO_ROOT / "training" / "configs", args.data_dir)


def results_command(args: argparse.Namespace) -> None:
    from training.report.results import write_results

    print(write_results(Path(args.checkpoints), Path(args.out), Path(args.reading), args.data_dir))


def carried_state_command(args: argparse.Namespace) -> None:
    from training.studies.carried_state import measure_checkpoints

    measure_checkpoints([Path(folder) for folder in args.checkpoints], args.data_dir, args.articles, args.device)
