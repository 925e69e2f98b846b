"""`memlens` command line: serve the web app, list checkpoints, translate with lesions, list hook points, train."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from inference.checkpoint import CheckpointError, CheckpointRegistry
from inference.hooks import hook_points
from inference.interventions import InterventionError, Interventions
from inference.analyses.working_memory import memory_tokens
from inference.trace import run_with_trace

DEFAULT_CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


def checkpoint_dir(value: str | None) -> Path:
    return Path(value or os.environ.get("MEMLENS_CHECKPOINT_DIR") or DEFAULT_CHECKPOINTS)


def list_models(args: argparse.Namespace) -> int:
    registry = CheckpointRegistry(checkpoint_dir(args.checkpoints), args.device)
    if not registry.entries:
        print(f"no checkpoints under {registry.root}")
    for name, entry in registry.entries.items():
        if entry.ok:
            tests = {split: bleu for split, bleu in entry.metrics.get("bleu", {}).items() if split != "val"}
            scores = [f"BLEU {split} {bleu:.2f}" for split, bleu in tests.items()]
            scores += [f"word perplexity {split} {value:.1f}" for split, value in entry.metrics.get("word_perplexity", {}).items() if split.startswith("wikitext103")]
            print(f"{name:28s} {entry.config.family:20s} memory {entry.config.memory_size:3d}  {' '.join(scores) or 'BLEU -'}")
        else:
            print(f"{name:28s} BROKEN: {entry.error}")
    return 0


def translate(args: argparse.Namespace) -> int:
    registry = CheckpointRegistry(checkpoint_dir(args.checkpoints), args.device)
    interventions = Interventions(
        memory_size=args.memory_size, block_memory_reads=args.block_reads, knockout_slots=tuple(args.knockout), mask_memory=args.mask_memory
    )
    loaded = registry.get(args.model)
    trace = run_with_trace(loaded, args.text, names=["logits"], interventions=interventions, seed=args.seed)
    for example, (source, translation) in enumerate(zip(trace.sources, trace.translations)):
        memory = f"\t[memory: {' '.join(memory_tokens(trace, example))}]" if trace.choices is not None else ""
        print(f"{source}\t{translation}{memory}")
    return 0


def list_hooks(args: argparse.Namespace) -> int:
    loaded = CheckpointRegistry(checkpoint_dir(args.checkpoints), args.device).get(args.model)
    for name, point in hook_points(loaded.model).items():
        print(f"{name:45s} {point.shape}")
    return 0


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.main import create_app
    from app.settings import Settings

    overrides = {"checkpoint_dir": checkpoint_dir(args.checkpoints)}
    if args.device:
        overrides["device"] = args.device
    uvicorn.run(create_app(Settings(**overrides)), host=args.host, port=args.port)
    return 0


def train(args: argparse.Namespace) -> int:
    from training.cli import main as training_main

    return training_main(["train", *args.rest])


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="memlens", description=__doc__)
    root.add_argument("--checkpoints", help="checkpoint folder (default: env MEMLENS_CHECKPOINT_DIR, else ./checkpoints)")
    root.add_argument("--device", default=None, help="auto (default), cpu, cuda, cuda:1 ...")
    commands = root.add_subparsers(dest="command", required=True)
    commands.add_parser("models", help="list checkpoints and why broken ones are unavailable").set_defaults(run=list_models)
    p = commands.add_parser("translate", help="translate sentences, optionally with lesions")
    p.add_argument("--model", required=True)
    p.add_argument("--memory-size", type=int, default=None, help="memory at inference (0 to 3x trained slots; working memory: 0 to 2x)")
    p.add_argument("--block-reads", choices=["none", "encoder", "decoder", "both"], default="none")
    p.add_argument("--knockout", type=int, nargs="*", default=[], help="memory slots to knock out")
    p.add_argument("--mask-memory", action="store_true", help="working memory: target tokens may not attend to memory")
    p.add_argument("--seed", type=int, default=0, help="working memory: seed of the memory sampling")
    p.add_argument("text", nargs="+")
    p.set_defaults(run=translate)
    p = commands.add_parser("hooks", help="list a model's hook points with shapes")
    p.add_argument("--model", required=True)
    p.set_defaults(run=list_hooks)
    p = commands.add_parser("serve", help="run the web app")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.set_defaults(run=serve)
    p = commands.add_parser("train", help="train a model from a config (same as `python -m training train`; see `memlens train --help`)", add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(run=train)
    return root


def main(argv: list[str] | None = None) -> int:
    root = parser()
    args, unknown = root.parse_known_args(argv)
    if args.command == "train":
        args.rest = [*unknown, *args.rest]  # options such as --help belong to the training command
    elif unknown:
        root.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.run(args)
    except (CheckpointError, InterventionError, ValueError) as error:
        print(f"memlens: {error}", file=sys.stderr)
        return 2
    except KeyError as error:
        print(f"memlens: no checkpoint named {error.args[0]!r}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
