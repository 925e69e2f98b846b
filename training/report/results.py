"""docs/results.md from the shipped checkpoints' metrics.json: our Tables
1-3 beside the Memory Transformer paper's (paper 000), the working-memory
decoder's Table 3 counterpart and memory-content study (paper 004, from
<checkpoint>/memory_analysis.json), and the FF-memory study by layer
(paper 003, from <checkpoint>/ff_analysis.json) with the language model's
perplexity.

The paper's numbers are WMT-14 news BLEU after 20 epochs, averaged over 3
runs; ours are single runs on Multi30k captions at a shorter schedule. Only
the shapes compare: which variant is better or worse than the baseline, and
how BLEU moves with memory size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from inference.core.places import REPO_ROOT
from training.evaluation.comparisons import Comparisons
from training.loop.config import ConfigError, load_config
from training.loop.seed_runs import seed_spread
from training.report.comparison_tables import (
    SHORT_SCHEDULE,
    grown_against_control,
    lesions_against_trained_size,
    pairs_against,
    schedule_against_short,
    short_schedule_labels,
    variants_against_baseline,
    working_memory_conditions,
)

TEST_SPLIT = "test_2016_flickr"
CHECKPOINTS = REPO_ROOT / "checkpoints"  # where the configs' init_from folders live

# Table 1, small models (4+4 layers, 20 epochs).
PAPER_TABLE_1 = {
    "transformer": ("Transformer (baseline)", 19.01),
    "memtransformer_5": ("MemTransformer 5", 19.17),
    "memtransformer_10": ("MemTransformer 10", 19.15),
    "memtransformer_20": ("MemTransformer 20", 19.14),
    "memctrl_20": ("MemCtrl 20", None),  # reported for base models only (24.13 vs baseline 24.65)
    "memctrl_shared_20": ("MemCtrl Shared 20", None),  # base only (25.73)
    "membottleneck_10": ("MemBottleneck 10", 11.20),
    "membottleneck_20": ("MemBottleneck 20", 10.41),
    "membottleneck_skip_20": ("MemBottleneck Skip 20", 16.45),
}
# Pairs of variants the paper ranks, the first above the second: (first, second) -> the paper's BLEU for them.
PAPER_RANKED = {
    ("membottleneck_skip_20", "membottleneck_20"): "small models: 16.45 against 10.41",
    ("memctrl_shared_20", "memctrl_20"): "base models: 25.73 against 24.13",
}
# Table 2, base models (6+6 layers): BLEU at inference memory sizes 0, 2, 5, 10, 20, 30.
PAPER_LESION_SIZES = [0, 2, 5, 10, 20, 30]
PAPER_TABLE_2 = {
    "memtransformer_10": [11.75, 15.91, 18.22, 25.07, 12.39, 7.87],
    "memtransformer_20": [3.87, 8.58, 9.75, 14.51, 25.58, 7.51],
}
# The models behind the headline claims, each trained under three seeds (training/train_seeds.sh).
SEEDED = {
    "transformer": "Transformer (baseline)",
    "memtransformer_10": "MemTransformer 10",
    "memtransformer_20": "MemTransformer 20",
    "membottleneck_10": "MemBottleneck 10",
    "working_memory_de_en": "Working memory de-en",
}
# Table 3: MemTransformer 5 grown by 5 slots per stage, fine-tuned at each; the run it grew from is the
# first stage's init_from (extension_chain).
EXTENSION_GROWN = ["memtransformer_5_to_10", "memtransformer_10_to_15", "memtransformer_15_to_20"]
PAPER_TABLE_3 = [19.17, 19.18, 19.19, 19.41]
# Our control for Table 3: MemTransformer 5 fine-tuned as many epochs as the three stages, memory not grown.
EXTENSION_CONTROL = "memtransformer_5_finetuned"
# A config named <name>_4_epochs trains the shorter run kept in checkpoints/short_schedule/<name>
# (training/train_all.sh); for Table 3's chain, the one grown from MemTransformer 5's 4-epoch run.
SHORTER_RUN = "_4_epochs"


# How each section's figures were produced: the decoding of every translation scored (inference.runs.translate:
# greedy for the Memory Transformer families; a working-memory model samples its memory and picks its
# translation tokens greedily), or none where the figures come from teacher-forced passes. No figure uses
# beam search (inference.core.decoding.Decoding), which the command line and traced runs offer.
DECODING = {
    "translation": "Decoding: greedy (the most likely token at every step), no beam search.",
    "lesions": "Decoding: greedy at every memory size, no beam search.",
    "working_memory": "Decoding: each working-memory model samples its memory "
    "(nucleus, p = its config's top_p, seed i for batch i) and "
    "picks its translation tokens greedily; the Transformer rows are greedy. No beam search.",
    "memory_content": "Decoding: the memory of the 'working memory' rows above "
    "(sampled, seed i for batch i; translation greedy).",
    "language_model": "Decoding: none; perplexity is teacher-forced over the test text.",
    "ff": "Decoding: none; every figure is from teacher-forced passes "
    "(corpus sentences; for translation models, the references).",
}

# Working memory (paper 004): each run, with the runs set beside it (folder -> label): for the German-English
# run on paper 004's schedule the Transformer trained as long and the shorter run kept in
# checkpoints/short_schedule; for that shorter run the 4-epoch Transformer it was warm-started from and that
# Transformer fine-tuned as long. A short-schedule run is shown only where its memory analysis is kept.
WM_RUNS = {
    "working_memory_de_en": {
        "transformer": "Transformer, 20 epochs (as long as the WM model)",
        f"{SHORT_SCHEDULE}/working_memory_de_en": "working memory, 4 + 2 epochs (the shorter run)",
    },
    f"{SHORT_SCHEDULE}/working_memory_de_en": {
        f"{SHORT_SCHEDULE}/transformer": "Transformer, 4 epochs (the warm start)",
        "transformer_finetuned": "Transformer, 4 + 2 epochs (as long as the WM model)",
    },
    "working_memory_ru_en": {},
}
WM_LESION_ROWS = {
    "memory": "working memory",
    "masked": "working memory, masked",
    "no_memory": "working memory, size 0 at inference",
}
# Paper 004, Table 3 (TED ru-en validation, BLEU): standard 21.16, WM 21.30, WM masked 20.56.
PAPER_WM_TABLE_3 = {"standard": 21.16, "memory": 21.30, "masked": 20.56}


def load_metrics(checkpoints: Path, file: str = "metrics.json") -> dict[str, dict]:
    """{folder: metrics} of every checkpoint, and of the short-schedule runs as "short_schedule/<name>"."""
    found = {}
    for path in sorted([*checkpoints.glob(f"*/{file}"), *checkpoints.glob(f"{SHORT_SCHEDULE}/*/{file}")]):
        try:
            found[str(path.parent.relative_to(checkpoints))] = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue  # a broken checkpoint is the registry's to report, not the table's
    return found


def _number(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def table_1(metrics: dict[str, dict]) -> list[str]:
    lines = [
        (
            "| model | BLEU val | BLEU test_2016_flickr | chrF test | epochs | train minutes "
            "| paper BLEU (WMT-14, small) |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for name, (label, paper) in PAPER_TABLE_1.items():
        m = metrics.get(name)
        if m is None:
            lines.append(f"| {label} | not trained yet | | | | | {_number(paper)} |")
            continue
        train = m.get("train", {})
        lines.append(
            f"| {label} | {_number(m['bleu'].get('val'))} | {_number(m['bleu'].get(TEST_SPLIT))} "
            f"| {_number(m['chrf'].get(TEST_SPLIT))} "
            f"| {train.get('epochs', '-')} | {train.get('seconds', 0) / 60:.0f} | {_number(paper)} |"
        )
    return lines


def table_2(metrics: dict[str, dict]) -> list[str]:
    shown = [metrics[name] for name in PAPER_TABLE_1 if name in metrics]
    sizes = sorted({k for m in shown for k in m.get("lesion", {}).get("memory_size", [])} | set(PAPER_LESION_SIZES))
    lines = ["| model | " + " | ".join(f"m={k}" for k in sizes) + " |", "|---|" + "---|" * len(sizes)]
    for name, (label, _) in PAPER_TABLE_1.items():
        lesion = metrics.get(name, {}).get("lesion")
        if lesion:
            by_size = dict(zip(lesion["memory_size"], lesion["bleu"]))
            lines.append(
                f"| {label} (ours) | " + " | ".join(_lesion_cell(by_size.get(k), k, name) for k in sizes) + " |"
            )
        if name in PAPER_TABLE_2:
            by_size = dict(zip(PAPER_LESION_SIZES, PAPER_TABLE_2[name]))
            lines.append(f"| {label} (paper, base) | " + " | ".join(_number(by_size.get(k)) for k in sizes) + " |")
    return lines


def _lesion_cell(value, size: int, name: str) -> str:
    trained = name.rsplit("_", 1)[-1]
    text = _number(value)
    return f"**{text}**" if trained.isdigit() and int(trained) == size and value is not None else text


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


def table_3(metrics: dict[str, dict], chain: ExtensionChain) -> list[str]:
    lines = [
        "| stage | memory | epochs behind its weights | BLEU test_2016_flickr (ours) "
        "| paper (WMT-14; 20 + 5 per stage epochs) |",
        "|---|---|---|---|---|",
    ]
    epochs = 0
    for stage, (name, paper) in enumerate(zip(chain.stages, PAPER_TABLE_3)):
        m = metrics.get(name)
        label = "trained" if stage == 0 else f"+{stage} fine-tuning stage{'s' if stage > 1 else ''}"
        if m is None:
            lines.append(f"| {label} | {5 * (stage + 1)} | | not trained yet | {_number(paper)} |")
            continue
        epochs += _epochs_kept(m)
        lines.append(
            f"| {label} | {5 * (stage + 1)} | {epochs} | {_number(m['bleu'].get(TEST_SPLIT))} | {_number(paper)} |"
        )
    control, started = metrics.get(chain.control), metrics.get(chain.start)
    if control and started:
        epochs = _epochs_kept(started) + _epochs_kept(control)
        lines.append(
            f"| control: fine-tuned, memory not grown | 5 | {epochs} | {_number(control['bleu'].get(TEST_SPLIT))} | - |"
        )
    return lines


def extension_section(
    metrics: dict[str, dict], chains: list[ExtensionChain], comparisons: Comparisons | None
) -> list[str]:
    """Table 3 for each chain, and its last stage against its start and its control."""
    lines = []
    for chain in chains:
        grown = grown_against_control(comparisons, chain.stages, chain.control) if comparisons is not None else []
        lines += [f"Grown from `checkpoints/{chain.start}`:", "", *table_3(metrics, chain), ""]
        if grown:
            lines += [
                "The last stage against the model it grew from and against the control, from the stored test outputs:",
                "",
                *grown,
                "",
            ]
    return lines


def working_memory_runs(analyses: dict[str, dict]) -> list[str]:
    """The working-memory runs the section shows: every shipped one, a short-schedule one where it is analysed."""
    return [run for run in WM_RUNS if run in analyses or not run.startswith(f"{SHORT_SCHEDULE}/")]


def working_memory_bleu(metrics: dict[str, dict], analyses: dict[str, dict]) -> list[str]:
    """The paper's Table 3 counterpart: BLEU with and without working memory and with the mask, per domain."""
    lines = []
    for name in working_memory_runs(analyses):
        analysis = analyses.get(name)
        if analysis is None:
            lines += [f"{name}: not trained or not analysed yet.", ""]
            continue
        domains = analysis["domains"]
        lines += [f"**{name}** ({analysis['max_sentences']} sentences per domain at most)", ""]
        lines += [
            "| model | " + " | ".join(d["domain"] for d in domains.values()) + " |",
            "|---|" + "---|" * len(domains),
        ]
        for beside, label in WM_RUNS[name].items():
            bleu = metrics.get(beside, {}).get("bleu", {})
            lines.append(f"| {label} | " + " | ".join(_number(bleu.get(split)) for split in domains) + " |")
        for key, label in WM_LESION_ROWS.items():
            lines.append(f"| {label} | " + " | ".join(_number(d["bleu"][key]) for d in domains.values()) + " |")
        lines.append("")
    paper = PAPER_WM_TABLE_3
    lines.append(
        f"Paper (TED ru-en validation, 20 epochs, 3 runs): standard Transformer {paper['standard']}, "
        f"working memory {paper['memory']}, working memory masked {paper['masked']}."
    )
    return lines


def working_memory_comparisons(comparisons: Comparisons, analyses: dict[str, dict]) -> list[str]:
    lines = []
    for model in working_memory_runs(analyses):
        table = working_memory_conditions(comparisons, model, WM_RUNS[model])
        if table:
            lines += [f"**{model}**, its headline test split, from the stored test outputs:", "", *table, ""]
    return lines


def memory_content_table(analyses: dict[str, dict]) -> list[str]:
    lines = [
        (
            "| model | domain | sentences | source words | memory length | no memory / full memory "
            "| unique tokens (mean / median) | Spearman(length, unique) "
            "| keywords in memory: per word; sentences with one or more (own / rotated) "
            "| content words in memory: per word; sentences with one or more (own / rotated) | sub-word pieces "
            "| top parts of speech |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in working_memory_runs(analyses):
        for domain in analyses.get(name, {}).get("domains", {}).values():
            s = domain["summary"]
            unique, keywords, content, pos = s["unique_tokens"], s["keywords"], s["content_words"], s["parts_of_speech"]
            top = ", ".join(f"{tag} {share:.2f}" for tag, share in list(pos["fractions"].items())[:3])
            lines.append(
                f"| {name} | {domain['domain']} | {domain['sentences']} | {domain['mean_source_words']:.1f} "
                f"| {unique['mean_memory_length']:.2f} | {_extremes(domain['memory_length_counts'])} "
                f"| {unique['mean_unique']:.2f} / {unique['median_unique']:.0f} "
                f"| {_number(s['diversity_by_length']['spearman_length_unique'])} "
                f"| {_rates(keywords)} | {_rates(content)} | {pos['subword_share']:.2f} | {top} |"
            )
    return lines


def _extremes(counts: list[int]) -> str:
    """Share of sentences with an empty memory / a full one."""
    total = sum(counts) or 1
    return f"{counts[0] / total:.2f} / {counts[-1] / total:.2f}"


def _rates(found: dict) -> str:
    """Per word, and the paper's measure (a sentence with one or more in memory), each own memory / rotated baseline."""
    own, rotated = found["matched"], found.get("rotated_baseline") or {}
    per_word = f"{_number(own['p_in_memory'])} / {_number(rotated.get('p_in_memory'))}"
    any_word = f"{_number(own['share_sentences_with_any'])} / {_number(rotated.get('share_sentences_with_any'))}"
    return f"{per_word}; {any_word}"


# Paper 003's shapes (16-layer Transformer LM on WikiText-103), as docs/REFERENCE.md states them.
PAPER_FF_SHAPES = (
    "agreement near 0 in the lower layers, rising in the upper layers; zero agreement in most predictions; "
    "the residual agrees with the final output more and more with depth; the FF output overriding the residual is rare"
)
LM_SPLITS = ["enwiki_val", "wikitext2_valid", "wikitext2_test", "wikitext103_valid", "wikitext103_test"]


def language_model_table(metrics: dict[str, dict]) -> list[str]:
    """Perplexity of every language model: per token of its own vocabulary,
    and per word (comparable across tokenizers)."""
    lines = [
        "| model | "
        + " | ".join(f"{split} word ppl (token ppl)" for split in LM_SPLITS)
        + " | steps | train minutes |",
        "|---|" + "---|" * (len(LM_SPLITS) + 2),
    ]
    for name, m in metrics.items():
        if "word_perplexity" not in m:
            continue
        cells = [f"{_number(m['word_perplexity'].get(s))} ({_number(m['perplexity'].get(s))})" for s in LM_SPLITS]
        train = m.get("train", {})
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {train.get('steps', '-')} | {_number(train['seconds'] / 60) if 'seconds' in train else '-'} |"
        )
    return lines


def ff_agreement_table(ff: dict[str, dict]) -> list[str]:
    lines = [
        (
            "| model | layer | keys with triggers | agreement (random keys) | any top-50 trigger agrees "
            "| median rank of w (random) | rank < 10 (random) |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for name, study in ff.items():
        for r in study["agreement"]:
            lines.append(
                f"| {name} | {r['layer']} | {r['keys_with_triggers']} "
                f"| {_share(r['agreement'])} ({_share(r['baseline_agreement'])}) "
                f"| {_share(r['any_trigger_agreement'])} | {r['median_rank']:.0f} ({r['baseline_median_rank']:.0f}) "
                f"| {_share(r['rank_below_10'])} ({_share(r['baseline_rank_below_10'])}) |"
            )
    return lines


def ff_aggregation_table(ff: dict[str, dict]) -> list[str]:
    lines = [
        (
            "| model | layer | active keys per prediction | zero agreement | residual wins | FF wins "
            "| all agree | composition | residual = final prediction |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, study in ff.items():
        for r in study["aggregation"]["layers"]:
            lines.append(
                f"| {name} | {r['layer']} | {r['mean_active_memories']:.1f} | {_share(r['zero_agreement'])} "
                f"| {_share(r['residual_wins'])} | {_share(r['ff_wins'])} | {_share(r['all_agree'])} "
                f"| {_share(r['composition'])} | {_share(r['residual_agrees_with_final'])} |"
            )
    return lines


def ff_corpora(ff: dict[str, dict]) -> list[str]:
    return [
        f"- {name}: mined on {s['mining']['corpus']} "
        f"({s['mining']['sentences']:,} sentences, top {s['mining']['top_k']} per key); "
        f"aggregation on {s['aggregation']['sentences']:,} held-out sentences"
        for name, s in ff.items()
    ]


def _share(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render(
    metrics: dict[str, dict],
    reading: str,
    analyses: dict[str, dict] | None = None,
    ff: dict[str, dict] | None = None,
    later_sections: list[str] | None = None,  # the segment-model and active-memory sections, rendered
    comparisons: Comparisons | None = None,  # the stored test outputs; None: no comparison tables
    *,
    extension: list[ExtensionChain],  # Table 3's chains (extension_chains)
) -> str:
    variants = {name: label for name, (label, _) in PAPER_TABLE_1.items()}
    compared = comparisons is not None
    schedule_table = schedule_against_short(comparisons, variants) if compared else []
    ranked = pairs_against(comparisons, list(PAPER_RANKED), variants) if compared else []
    paper_ranks = "; ".join(f"{variants[a]} above {variants[b]} ({bleu} BLEU)" for (a, b), bleu in PAPER_RANKED.items())
    seeds = seed_spread(comparisons, SEEDED) if compared else []
    shorter = short_schedule_labels(comparisons, variants, lesioned=False) if compared else {}
    lesioned = {**variants, **short_schedule_labels(comparisons, variants, lesioned=True)} if compared else {}
    parts = [
        "# Results: the memory models at small scale",
        "",
        "Generated by `python -m training results` from `checkpoints/*/metrics.json`; do not edit by hand.",
        "Ours: one run per model (seed 1; the Seeds table adds seeds where trained), "
        "paper's small configuration (d_model 128, d_ff 512, 8 heads, 4+4 layers),",
        "Multi30k de-en, sacrebleu BLEU on detokenized text; each section names the decoding behind its figures. "
        "The schedule and epochs of each run are",
        "in its metrics.json and in the table. Paper: WMT-14 de-en news, 3-run averages, 20 epochs.",
        "Absolute BLEU does not compare (image captions are short and repetitive, news is not); shapes do.",
        "",
        "## Table 1: BLEU by variant",
        "",
        DECODING["translation"],
        "",
        *table_1(metrics),
        "",
        *(
            [
                "BLEU, chrF and the length ratio from the stored test outputs, each variant against the baseline "
                "trained for as many epochs: the shipped runs, then the shorter runs kept in "
                "`checkpoints/short_schedule` against the baseline's:",
                "",
                *variants_against_baseline(comparisons, {**variants, **shorter}),
                "",
            ]
            if compared
            else []
        ),
        *(
            [
                "### Pairs the paper ranks",
                "",
                f"The paper puts {paper_ranks}; ours, the first minus the second on the same test sentences, "
                "at each schedule both were trained on:",
                "",
                *ranked,
                "",
            ]
            if ranked
            else []
        ),
        *(
            [
                "### Training length: the paper's 20 epochs against our first 4",
                "",
                "Each model retrained on the paper's schedule, against its shorter run (kept in "
                "`checkpoints/short_schedule`, config, metrics and outputs), on the same test sentences:",
                "",
                *schedule_table,
                "",
            ]
            if schedule_table
            else []
        ),
        *(
            [
                "### Seeds: the spread of a model over its training seeds",
                "",
                "The shipped run and the same config under other seeds (`checkpoints/seeds/<name>/seed_<k>`, "
                "`training/train_seeds.sh`), trained for as many epochs; mean ± sample standard deviation over "
                "the seeds, from the stored test outputs. A row with one seed has no other seed trained yet.",
                "",
                *seeds,
                "",
            ]
            if seeds
            else []
        ),
        "## Table 2: memory lesions (BLEU on test_2016_flickr at each inference memory size; trained size in bold)",
        "",
        DECODING["lesions"] + " The paper's rows: as the paper reports them.",
        "",
        *table_2(metrics),
        "",
        *(
            [
                "Each memory size against the same run's trained size, from the stored test outputs; below the "
                "shipped runs, the memory models' shorter runs (`checkpoints/short_schedule`, labelled with their "
                "epochs):",
                "",
                *lesions_against_trained_size(comparisons, lesioned),
                "",
            ]
            if compared
            else []
        ),
        "## Table 3: memory extension (MemTransformer 5 grown by 5 slots per stage, fine-tuned each stage)",
        "",
        DECODING["translation"],
        "",
        *extension_section(metrics, extension, comparisons),
        "## Working memory in the decoder (paper 004): BLEU with and without memory",
        "",
        DECODING["working_memory"],
        "",
        *working_memory_bleu(metrics, analyses or {}),
        "",
        *(working_memory_comparisons(comparisons, analyses or {}) if compared else []),
        "## Working memory: memory content by domain",
        "",
        "Memory length counts every memory token; unique tokens are distinct vocabulary pieces. "
        "'Rotated' pairs each memory",
        "with the next sentence's translation: the rate expected from frequent words alone. "
        "Keywords are YAKE's top 3 single words.",
        DECODING["memory_content"],
        "",
        *memory_content_table(analyses or {}),
        "",
        "## FF layers as key-value memories (paper 003)",
        "",
        "The language model: pre-LN decoder-only Transformer with ReLU FF layers on enwiki (docs/language_model.md). "
        "Word perplexity",
        "divides the summed token loss by the WikiText word count, so it compares across tokenizers; "
        "token perplexity is per BPE token.",
        DECODING["language_model"],
        "",
        *language_model_table(metrics),
        "",
        "Studies (`python -m training ff-memories`): trigger prefixes, one per sentence, top 50 per key; "
        "w is the next token of a key's",
        "top trigger; a key agrees when argmax p_i = w. 'Random' pairs every value with another key's w. "
        "Cases compare the top token of",
        "the residual entering the FF layer, of the FF output and of the layer output. "
        "Translation models: their decoders, teacher-forced.",
        DECODING["ff"],
        "",
        *ff_corpora(ff or {}),
        "",
        f"Paper 003 (16-layer LM, WikiText-103), shapes: {PAPER_FF_SHAPES}.",
        "",
        "### Key-value agreement by layer",
        "",
        *ff_agreement_table(ff or {}),
        "",
        "### How memories add up to predictions, by layer",
        "",
        *ff_aggregation_table(ff or {}),
        "",
        *(later_sections or []),
        "## Reading",
        "",
        reading,
        "",
    ]
    return "\n".join(parts)


def write_results(
    checkpoints: Path,
    out: Path,
    reading_file: Path,
    data_dir: str | Path | None = None,
    configs: Path = REPO_ROOT / "training" / "configs",  # the training configs (Table 3's chain, segment LMs)
) -> Path:
    """Render the tables; the prose reading is kept in its own file
    (docs/results_reading.md) because it is judgement, not data. The
    comparison tables read the stored test outputs' references from
    `data_dir`."""
    from training.report.active_memory import active_memory_section
    from training.report.segment_lm import segment_lm_section
    from training.report.segment_tasks import segment_task_section  # it imports this module's load_metrics

    reading = reading_file.read_text().strip() if reading_file.exists() else "(no reading written yet)"
    out.write_text(
        render(
            load_metrics(checkpoints),
            reading,
            load_metrics(checkpoints, "memory_analysis.json"),
            load_metrics(checkpoints, "ff_analysis.json"),
            [
                *segment_task_section(checkpoints),
                *segment_lm_section(checkpoints, configs),
                *active_memory_section(checkpoints),
            ],
            Comparisons(checkpoints, data_dir),
            extension=extension_chains(configs),
        )
    )
    return out
