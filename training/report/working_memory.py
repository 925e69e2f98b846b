"""The working-memory sections of docs/results.md (paper 004), from <checkpoint>/memory_analysis.json: BLEU, chrF
and the length ratio with and without the decoder's working memory beside the paper's Table 3, and what the memory
holds, by domain."""

from __future__ import annotations

from inference.analyses.quality import Quality
from inference.runs.memory_corpus import memory_lesions
from training.evaluation.bootstrap import PairedDifference
from training.evaluation.comparisons import Comparisons, method_note, quality_cells
from training.report.comparison_tables import working_memory_conditions
from training.report.decoding_notes import DECODING
from training.report.metrics_files import SHORT_SCHEDULE, number

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
METRICS = ("bleu", "chrf")  # the metrics a lesion's difference is bootstrapped in
# Paper 004, Table 3 (TED ru-en validation, BLEU): standard 21.16, WM 21.30, WM masked 20.56.
PAPER_WM_TABLE_3 = {"standard": 21.16, "memory": 21.30, "masked": 20.56}


def working_memory_runs(analyses: dict[str, dict]) -> list[str]:
    """The working-memory runs the section shows: every shipped one, a short-schedule one where it is analysed."""
    return [run for run in WM_RUNS if run in analyses or not run.startswith(f"{SHORT_SCHEDULE}/")]


def working_memory_section(analyses: dict[str, dict], comparisons: Comparisons | None) -> list[str]:
    """Translation quality with and without working memory and, from the stored test outputs, its conditions
    compared."""
    return [
        "## Working memory in the decoder (paper 004): BLEU, chrF and length ratio with and without memory",
        "",
        DECODING["working_memory"],
        "",
        *working_memory_by_domain(analyses),
        "",
        *(working_memory_comparisons(comparisons, analyses) if comparisons is not None else []),
    ]


def working_memory_by_domain(analyses: dict[str, dict]) -> list[str]:
    """The paper's Table 3 counterpart: BLEU, chrF and the length ratio with and without working memory and with
    the mask, per domain (the plain Transformers beside each run are in its comparison table, on its headline
    split)."""
    lines = []
    for name in working_memory_runs(analyses):
        analysis = analyses.get(name)
        if analysis is None:
            lines += [f"{name}: not trained or not analysed yet.", ""]
            continue
        domains = analysis["domains"].values()
        lines += [
            f"**{name}** ({analysis['max_sentences']} sentences per domain at most)",
            "",
            "| model | " + " | ".join(f"{d['domain']}: BLEU | chrF | length ratio" for d in domains) + " |",
            "|---|" + "---|---|---|" * len(domains),
        ]
        for key, label in WM_LESION_ROWS.items():
            lines.append(f"| {label} | " + " | ".join(domain_cells(d, key) for d in domains) + " |")
        lines += ["", *lesion_difference_table(list(domains))]
    paper = PAPER_WM_TABLE_3
    lines.append(
        f"Paper (TED ru-en validation, 20 epochs, 3 runs; BLEU only): standard Transformer {paper['standard']}, "
        f"working memory {paper['memory']}, working memory masked {paper['masked']}."
    )
    return lines


def lesion_difference_table(domains: list[dict]) -> list[str]:
    """Each lesion minus the model with memory, BLEU and chrF per domain, with their paired bootstrap intervals;
    nothing for an analysis that predates them."""
    if not all("differences" in d for d in domains):
        return []
    lines = [
        "| lesion minus working memory | " + " | ".join(f"{d['domain']}: BLEU | chrF" for d in domains) + " |",
        "|---|" + "---|---|" * len(domains),
    ]
    for key in memory_lesions():
        cells = (PairedDifference(**d["differences"][key][metric]).text() for d in domains for metric in METRICS)
        lines.append(f"| {WM_LESION_ROWS[key]} | " + " | ".join(cells) + " |")
    return [*lines, *method_note(), ""]


def domain_cells(domain: dict, condition: str) -> str:
    """'BLEU | chrF | length ratio' of one condition on one domain; BLEU alone from an analysis that predates the
    other two and whose weights are not kept to rerun it."""
    if "chrf" not in domain:
        return f"{number(domain['bleu'][condition])} | - | -"
    bleu, chrf, ratio = (domain[metric][condition] for metric in ("bleu", "chrf", "length_ratio"))
    return quality_cells(Quality(bleu, chrf, ratio, domain["sentences"]))


def working_memory_comparisons(comparisons: Comparisons, analyses: dict[str, dict]) -> list[str]:
    lines = []
    for model in working_memory_runs(analyses):
        table = working_memory_conditions(comparisons, model, WM_RUNS[model])
        if table:
            lines += [f"**{model}**, its headline test split, from the stored test outputs:", "", *table, ""]
    return lines


def memory_content_section(analyses: dict[str, dict]) -> list[str]:
    """What the working memory holds, by domain, against a rotated baseline."""
    return [
        "## Working memory: memory content by domain",
        "",
        "Memory length counts every memory token; unique tokens are distinct vocabulary pieces. "
        "'Rotated' pairs each memory",
        "with the next sentence's translation: the rate expected from frequent words alone. "
        "Keywords are YAKE's top 3 single words.",
        DECODING["memory_content"],
        "",
        *memory_content_table(analyses),
        "",
    ]


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
                f"| {number(s['diversity_by_length']['spearman_length_unique'])} "
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
    per_word = f"{number(own['p_in_memory'])} / {number(rotated.get('p_in_memory'))}"
    any_word = f"{number(own['share_sentences_with_any'])} / {number(rotated.get('share_sentences_with_any'))}"
    return f"{per_word}; {any_word}"
