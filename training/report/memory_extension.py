"""Table 3 of docs/results.md: the Memory Transformer's memory grown stage by stage (paper 000), each chain of
runs read from the training configs, beside the paper's figures and a control whose memory was not grown."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inference.core.places import REPO_ROOT
from training.evaluation.comparisons import Comparisons, quality_cells
from training.evaluation.outputs import AS_TRAINED
from training.loop.config import ConfigError, load_config
from training.report.comparison_tables import grown_against_control
from training.report.decoding_notes import DECODING
from training.report.metrics_files import SHORT_SCHEDULE, TEST_SPLIT, number

CHECKPOINTS = REPO_ROOT / "checkpoints"  # where the configs' init_from folders live

# Table 3: MemTransformer 5 grown by 5 slots per stage, fine-tuned at each; the run it grew from is the
# first stage's init_from (extension_chain).
EXTENSION_GROWN = ["memtransformer_5_to_10", "memtransformer_10_to_15", "memtransformer_15_to_20"]
PAPER_TABLE_3 = [19.17, 19.18, 19.19, 19.41]
# Our control for Table 3: MemTransformer 5 fine-tuned as many epochs as the three stages, memory not grown.
EXTENSION_CONTROL = "memtransformer_5_finetuned"
# A config named <name>_4_epochs trains the shorter run kept in checkpoints/short_schedule/<name>
# (training/train_all.sh); for Table 3's chain, the one grown from MemTransformer 5's 4-epoch run.
SHORTER_RUN = "_4_epochs"


@dataclass(frozen=True)
class ExtensionChain:
    """Table 3's runs on one schedule, as folders under checkpoints/."""

    start: str  # the run the first stage and the control grew from
    grown: list[str]  # the grown stages, in order
    control: str  # the start fine-tuned as long, memory not grown

    @property
    def stages(self) -> list[str]:
        return [self.start, *self.grown]


def extension_chain(configs: Path, suffix: str = "") -> ExtensionChain:
    """The chain the configs EXTENSION_GROWN and EXTENSION_CONTROL (each name + `suffix`) train: with
    SHORTER_RUN the one kept in checkpoints/short_schedule, else the shipped one. Its start is the folder both
    the first stage and the control name as init_from, e.g. "short_schedule/memtransformer_5"."""
    starts = set()
    for name in (EXTENSION_GROWN[0], EXTENSION_CONTROL):
        folder = load_config(configs / f"{name}{suffix}.json").init_from_folder
        if folder is None or not folder.resolve().is_relative_to(CHECKPOINTS.resolve()):
            raise ConfigError(f"{configs / name}{suffix}.json must start from a folder under {CHECKPOINTS} (init_from)")
        starts.add(folder.resolve().relative_to(CHECKPOINTS.resolve()).as_posix())
    if len(starts) != 1:
        raise ConfigError(f"the extension chain and its control start from different checkpoints: {sorted(starts)}")
    kept = f"{SHORT_SCHEDULE}/" if suffix == SHORTER_RUN else ""
    return ExtensionChain(starts.pop(), [kept + name for name in EXTENSION_GROWN], kept + EXTENSION_CONTROL)


def extension_chains(configs: Path) -> list[ExtensionChain]:
    """The shipped chain and, where its configs exist, the one grown on the shorter schedule."""
    shorter = (configs / f"{EXTENSION_GROWN[0]}{SHORTER_RUN}.json").exists()
    return [extension_chain(configs), *([extension_chain(configs, SHORTER_RUN)] if shorter else [])]


def _epochs_kept(metrics: dict) -> int:
    """The epochs of training behind a checkpoint's weights: the epoch chosen on validation, else all it ran
    (a stage grows the weights its predecessor kept, not its last)."""
    train = metrics.get("train", {})
    return train.get("selected_epoch", train.get("epochs", 0))


def quality_on_test(name: str, metrics: dict, comparisons: Comparisons | None) -> str:
    """'BLEU | chrF | length ratio' of a run on test_2016_flickr: from its stored test outputs, else its metrics'
    BLEU and chrF."""
    quality = comparisons.quality((name, AS_TRAINED)) if comparisons is not None else None
    if quality is not None:
        return quality_cells(quality)
    return f"{number(metrics['bleu'].get(TEST_SPLIT))} | {number(metrics.get('chrf', {}).get(TEST_SPLIT))} | -"


def table_3(metrics: dict[str, dict], chain: ExtensionChain, comparisons: Comparisons | None) -> list[str]:
    lines = [
        "| stage | memory | epochs behind its weights | BLEU test_2016_flickr (ours) | chrF | length ratio "
        "| paper BLEU (WMT-14; 20 + 5 per stage epochs) |",
        "|---|---|---|---|---|---|---|",
    ]
    epochs = 0
    for stage, (name, paper) in enumerate(zip(chain.stages, PAPER_TABLE_3)):
        m = metrics.get(name)
        label = "trained" if stage == 0 else f"+{stage} fine-tuning stage{'s' if stage > 1 else ''}"
        if m is None:
            lines.append(f"| {label} | {5 * (stage + 1)} | | not trained yet | | | {number(paper)} |")
            continue
        epochs += _epochs_kept(m)
        lines.append(
            f"| {label} | {5 * (stage + 1)} | {epochs} | {quality_on_test(name, m, comparisons)} | {number(paper)} |"
        )
    control, started = metrics.get(chain.control), metrics.get(chain.start)
    if control and started:
        epochs = _epochs_kept(started) + _epochs_kept(control)
        quality = quality_on_test(chain.control, control, comparisons)
        lines.append(f"| control: fine-tuned, memory not grown | 5 | {epochs} | {quality} | - |")
    return lines


def extension_section(
    metrics: dict[str, dict], chains: list[ExtensionChain], comparisons: Comparisons | None
) -> list[str]:
    """Table 3 for each chain, and its last stage against its start and its control."""
    lines = [
        "## Table 3: memory extension (MemTransformer 5 grown by 5 slots per stage, fine-tuned each stage)",
        "",
        DECODING["translation"],
        "",
    ]
    for chain in chains:
        grown = grown_against_control(comparisons, chain.stages, chain.control) if comparisons is not None else []
        lines += [f"Grown from `checkpoints/{chain.start}`:", "", *table_3(metrics, chain, comparisons), ""]
        if grown:
            lines += [
                "The last stage against the model it grew from and against the control, from the stored test outputs:",
                "",
                *grown,
                "",
            ]
    return lines
