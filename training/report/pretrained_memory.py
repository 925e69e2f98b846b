"""The issue-36 section of docs/results.md: the GPT-2 trained here beside the shipped language model (the same
tokens, steps and batch), and recurrent memory added to that GPT-2 the way paper 002's wrapper adds it, on enwiki
segments and on the copy task, each with the memory carried and reset at every segment.

Read from checkpoints/gpt2_enwiki (a Hugging Face folder), checkpoints/language_model, the served memory runs
(checkpoints/gpt2_enwiki_memory10, gpt2_copy_memory10) and the other runs' records in checkpoints/pretrained_memory/."""

from __future__ import annotations

import json
from pathlib import Path

from inference.analyses.carried_state import AS_TRAINED, WITHOUT
from inference.core.checkpoint import CARRIED_STATE_KEY
from training.evaluation.bootstrap import (
    LEVEL,
    RESAMPLES,
    interval_text,
    paired_mean_difference,
    sample_char_accuracy,
)
from training.loop.config import load_config
from training.report.language_model import LM_SPLITS
from training.report.segment_lm import difference_cell

BOOTSTRAP_SEED = 0
GPT2, LANGUAGE_MODEL = "gpt2_enwiki", "language_model"
ENWIKI_MEMORY = "gpt2_enwiki_memory10"
RUNS = "pretrained_memory"  # the seeds' and controls' records


def read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def gpt2_table(checkpoints: Path, configs: Path) -> list[str]:
    gpt2, lm = read_json(checkpoints / GPT2 / "metrics.json"), read_json(checkpoints / LANGUAGE_MODEL / "metrics.json")
    if gpt2 is None or lm is None:
        return [f"No {GPT2} run yet (`training/train_pretrained_memory.sh`).", ""]
    lines = [
        "| model | " + " | ".join(f"{split} ppl" for split in LM_SPLITS) + " | steps | train tokens | seed | device |",
        "|---" * (len(LM_SPLITS) + 5) + "|",
    ]
    for name, metrics in ((LANGUAGE_MODEL, lm), (GPT2, gpt2)):
        run = load_config(configs / f"{name}.json")
        seed = run.train.seed
        train = metrics["train"]
        tokens = train["steps"] * run.train.batch_size * run.data.max_len
        cells = " | ".join(f"{metrics['perplexity'][split]:.1f}" for split in LM_SPLITS)
        lines.append(f"| {name} | {cells} | {train['steps']:,} | {tokens:,} | {seed} | {train['device']} |")
    differences = " | ".join(difference_cell(gpt2, lm, split) for split in LM_SPLITS)
    lines.append(f"| Δ {GPT2} − {LANGUAGE_MODEL} [95% CI] | {differences} | | | | |")
    return [*lines, ""]


def enwiki_memory_table(checkpoints: Path) -> list[str]:
    carried = read_json(checkpoints / ENWIKI_MEMORY / "metrics.json")
    study = None if carried is None else carried.get(CARRIED_STATE_KEY)
    reset = read_json(checkpoints / RUNS / f"{ENWIKI_MEMORY}_reset" / "metrics.json")
    if carried is None:
        return [f"No {ENWIKI_MEMORY} run yet.", ""]
    lines = [
        "| model | enwiki val ppl | WT-103 test ppl | enwiki val word ppl | steps |",
        "|---|---|---|---|---|",
        f"| memory carried ({ENWIKI_MEMORY}) | {carried['perplexity']['enwiki_val']:.1f} | "
        f"{carried['perplexity']['wikitext103_test']:.1f} | {carried['word_perplexity']['enwiki_val']:.0f} | "
        f"{carried['train']['steps']:,} |",
    ]
    if reset is not None:
        steps = reset.get("train", {}).get("steps")
        lines.append(
            f"| trained with the memory reset at every segment | {reset['perplexity']['enwiki_val']:.1f} | "
            f"{reset['perplexity']['wikitext103_test']:.1f} | {reset['word_perplexity']['enwiki_val']:.0f} | "
            f"{'-' if steps is None else f'{steps:,}'} |"
        )
    lines.append("")
    if reset is not None and "source" in reset:
        lines += [
            f"The reset-trained run's figures come from {reset['source']}; the carried run's row is its float16 "
            "weights, re-measured.",
            "",
        ]
    if study is not None:
        text, difference = study["text"], study["difference"]
        lines += [
            f"The carried model on the first {text['articles']} enwiki validation articles ({text['scored']:,} "
            f"tokens, windows of {text['context']}): perplexity {study['perplexity'][AS_TRAINED]:.2f} with its "
            f"memory, {study['perplexity'][WITHOUT]:.2f} with the memory reset to its initial value "
            f"at every segment: Δ {interval_text(difference['perplexity'], difference['low'], difference['high'])} "
            f"({difference['level']:.0%} interval, {difference['resamples']:,} paired resamplings of the articles, "
            f"seed {difference['seed']}).",
            "",
        ]
    return lines


def copy_runs(checkpoints: Path) -> list[dict]:
    """The copy runs on the GPT-2 (their metrics.json), served or recorded, one per carry and seed (a served run's
    record also stands in the runs' folder)."""
    found: dict[tuple[str, int], dict] = {}
    for path in [*(checkpoints / RUNS).glob("*/metrics.json"), *checkpoints.glob("*/metrics.json")]:
        run = read_json(path) or {}
        if run.get("task") == "copy" and Path(run.get("training", {}).get("base") or "").name == GPT2:
            found.setdefault((run["carry"], run["seed"]), run)
    return [found[key] for key in sorted(found)]


def copy_table(checkpoints: Path) -> list[str]:
    runs = copy_runs(checkpoints)
    if not runs:
        return ["No copy runs on the GPT-2 yet.", ""]
    lines = [
        "| memory | seed | test per-char accuracy | whole answers right | best step (validation) | steps | train s |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in sorted(runs, key=lambda run: (run["carry"] != "rmt", run["seed"])):
        memory = "carried" if run["carry"] == "rmt" else "reset at every segment"
        lines.append(
            f"| {memory} | {run['seed']} | {run['test']['char_accuracy']:.4f} | {run['test']['answer_accuracy']:.3f} "
            f"| {run['best_step']} | {run['steps']} | {run['train_seconds']:.0f} |"
        )
    lines.append("")
    by_key = {(run["carry"], run["seed"]): run for run in runs}
    for seed in sorted({run["seed"] for run in runs}):
        carried_run, reset_run = by_key.get(("rmt", seed)), by_key.get(("reset", seed))
        if carried_run is None or reset_run is None:
            continue
        carried, reset = sample_char_accuracy(carried_run["test"]), sample_char_accuracy(reset_run["test"])
        if carried is None or reset is None:
            lines.append(f"Seed {seed}: no per-sample record of both runs, so no interval.")
            continue
        difference, low, high = paired_mean_difference(carried, reset, BOOTSTRAP_SEED)
        lines.append(
            f"Seed {seed}: per-char accuracy carried − reset {difference:+.4f} [{low:+.4f}, {high:+.4f}] ({LEVEL:.0%} "
            "interval, "
            f"{RESAMPLES:,} paired resamplings of the {len(carried):,} test samples, seed {BOOTSTRAP_SEED})."
        )
    return [*lines, ""]


def pretrained_memory_section(checkpoints: Path, configs: Path) -> list[str]:
    return [
        "## A GPT-2 trained here, and recurrent memory added to it (issue 36; paper 002's wrapper)",
        "",
        f"`{GPT2}` is a Hugging Face GPT-2 (d_model 192, 6 layers, d_ff 768, 256 positions) trained by our CLI "
        "(`training/configs/gpt2_enwiki.json`) with the shipped language model's tokenizer, steps and batch, and "
        "saved with `save_pretrained`; the app opens it through the Hugging Face family only. Token perplexity, "
        "windows of 256 advancing by 128; Δ: the difference with its 95% interval over 2,000 paired resamplings of "
        "each text's articles (seed 0), where both runs recorded per-article totals.",
        "",
        *gpt2_table(checkpoints, configs),
        "Memory added to that GPT-2 (`training/train_pretrained_memory.sh`): 10 memory tokens read at the start and "
        "written at the end of every segment of 50 tokens, the write block's final states carried to the next "
        "segment, full BPTT within blocks of 250 tokens, 1,000 steps of 32 blocks from the GPT-2's weights; the "
        "control is the same training with the memory reset at every segment (the memory tokens a learnt prefix). "
        "Perplexity on windows of 250 advancing by 125, the memory fresh at each window.",
        "",
        *enwiki_memory_table(checkpoints),
        "The copy task (paper 002: 24 symbols, copied twice; 73 tokens in 3 segments of 25) on the same GPT-2, its "
        "characters read as the GPT-2's tokens, 10 memory tokens, Adam 3e-4, 3,000 steps of 32, the best step on "
        "256 validation samples, 1,000 test samples; teacher-forced per-character accuracy of the 48 target "
        "characters.",
        "",
        *copy_table(checkpoints),
    ]
