"""docs/results.md is rendered from metrics.json files, paper numbers beside ours."""

import json
import shutil
from pathlib import Path

import pytest

from inference.core.places import REPO_ROOT
from training.loop.config import ConfigError
from training.report import segment_tasks
from training.report.memory_extension import SHORTER_RUN, extension_chain, extension_chains
from training.report.results import write_results

CONFIGS = REPO_ROOT / "training" / "configs"
METRICS = ("bleu", "chrf")


def configs_starting_the_chain_from(
    folder: Path, start: str, control_start: str | None = None, suffix: str = ""
) -> Path:
    """A copy of the shipped training configs whose extension chain (the configs named + suffix) and control start
    from checkpoints/<start>."""
    if not folder.exists():
        shutil.copytree(CONFIGS, folder)
    for name, init_from in (("memtransformer_5_to_10", start), ("memtransformer_5_finetuned", control_start or start)):
        config = json.loads((CONFIGS / f"{name}.json").read_text())
        (folder / f"{name}{suffix}.json").write_text(json.dumps({**config, "init_from": init_from}))
    return folder


def test_results_tables_come_from_metrics(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    for name, bleu, lesion in [
        ("transformer", 30.5, None),
        ("memtransformer_5", 35.0, None),  # not the run the chain grew from here
        ("short_schedule/memtransformer_5", 28.0, None),
        ("memtransformer_5_finetuned", 29.5, None),
        (
            "memtransformer_10",
            31.25,
            {"memory_size": [0, 2, 5, 10, 20, 30], "bleu": [10.0, 20.0, 25.0, 31.25, 28.0, 22.0]},
        ),
    ]:
        (checkpoints / name).mkdir(parents=True)
        metrics = {
            "bleu": {"val": bleu + 1, "test_2016_flickr": bleu},
            "chrf": {"test_2016_flickr": 50.0},
            "train": {"epochs": 4, "seconds": 600},
        }
        if lesion:
            metrics["lesion"] = lesion
        (checkpoints / name / "metrics.json").write_text(json.dumps(metrics))
    configs = configs_starting_the_chain_from(tmp_path / "configs", "checkpoints/short_schedule/memtransformer_5")
    reading = tmp_path / "reading.md"
    reading.write_text("Shapes agree.")
    text = write_results(checkpoints, tmp_path / "results.md", reading, configs=configs).read_text()
    assert "| Transformer (baseline) | 31.50 | 30.50 | 50.00 | 4 | 10 | 19.01 |" in text
    assert "| MemCtrl 20 | not trained yet |" in text
    assert "| trained | 5 | 4 | 28.00 | 50.00 | - | 19.17 |" in text  # Table 3 starts from the run the chain grew from
    assert "| MemTransformer 5 | 36.00 | 35.00 |" in text  # Table 1 shows the shipped run
    assert "| control: fine-tuned, memory not grown | 5 | 8 | 29.50 | 50.00 | - | - |" in text
    assert "| MemTransformer 10 (ours) | 10.00 | 20.00 | 25.00 | **31.25** | 28.00 | 22.00 |" in text
    assert "| MemTransformer 10 (paper, base) | 11.75 | 15.91 | 18.22 | 25.07 | 12.39 | 7.87 |" in text
    assert text.rstrip().endswith("Shapes agree.")


def test_the_extension_chain_starts_where_its_configs_say(tmp_path):
    short = "checkpoints/short_schedule/memtransformer_5"
    chain = extension_chain(configs_starting_the_chain_from(tmp_path / "a", short))
    assert chain.start == "short_schedule/memtransformer_5"
    assert chain.grown[0] == "memtransformer_5_to_10" and chain.control == "memtransformer_5_finetuned"
    assert extension_chain(configs_starting_the_chain_from(tmp_path / "b", short, f"{short}/")).start == (
        "short_schedule/memtransformer_5"  # one folder, however written
    )
    with pytest.raises(ConfigError, match="start from different checkpoints"):
        extension_chain(configs_starting_the_chain_from(tmp_path / "c", short, "checkpoints/memtransformer_5"))
    with pytest.raises(ConfigError, match="must start from a folder under"):
        extension_chain(configs_starting_the_chain_from(tmp_path / "d", str(tmp_path / "elsewhere")))


def test_table_3_sets_the_chain_grown_on_the_shorter_schedule_beside_the_shipped_one(tmp_path):
    configs = configs_starting_the_chain_from(tmp_path / "configs", "checkpoints/memtransformer_5")
    configs_starting_the_chain_from(configs, "checkpoints/short_schedule/memtransformer_5", suffix=SHORTER_RUN)
    shipped, shorter = extension_chains(configs)
    assert shipped.start == "memtransformer_5" and shipped.grown[-1] == "memtransformer_15_to_20"
    assert shorter.start == "short_schedule/memtransformer_5"
    assert shorter.grown == [f"short_schedule/{name}" for name in shipped.grown]
    assert shorter.control == "short_schedule/memtransformer_5_finetuned"
    checkpoints = tmp_path / "checkpoints"
    for name, bleu, epochs in [
        ("memtransformer_5", 35.0, 20),
        ("memtransformer_5_to_10", 36.0, 5),
        ("memtransformer_5_finetuned", 36.5, 15),  # the weights of its epoch 12 (below)
        ("short_schedule/memtransformer_5", 28.0, 4),
        ("short_schedule/memtransformer_5_to_10", 31.0, 1),
        ("short_schedule/memtransformer_5_finetuned", 33.0, 3),
    ]:
        (checkpoints / name).mkdir(parents=True)
        metrics = {"bleu": {"test_2016_flickr": bleu}, "chrf": {"test_2016_flickr": 50.0}, "train": {"epochs": epochs}}
        if name == "memtransformer_5_finetuned":
            metrics["train"]["selected_epoch"] = 12
        (checkpoints / name / "metrics.json").write_text(json.dumps(metrics))
    reading = tmp_path / "reading.md"
    reading.write_text("-")
    text = write_results(checkpoints, tmp_path / "results.md", reading, configs=configs).read_text()
    table_3 = text[text.index("## Table 3") : text.index("## Working memory")]
    first, second = table_3.split("Grown from `checkpoints/short_schedule/memtransformer_5`:")
    assert "Grown from `checkpoints/memtransformer_5`:" in first
    assert (
        "| trained | 5 | 20 | 35.00 | 50.00 | - | 19.17 |" in first
        and "| +1 fine-tuning stage | 10 | 25 | 36.00 | 50.00 | - | 19.18 |" in first
    )
    assert "| +2 fine-tuning stages | 15 | | not trained yet | | | 19.19 |" in first
    assert "| control: fine-tuned, memory not grown | 5 | 32 | 36.50 | 50.00 | - | - |" in first  # 20 + the 12 it kept
    assert (
        "| trained | 5 | 4 | 28.00 | 50.00 | - | 19.17 |" in second
        and "| +1 fine-tuning stage | 10 | 5 | 31.00 | 50.00 | - | 19.18 |" in second
    )
    assert "| control: fine-tuned, memory not grown | 5 | 7 | 33.00 | 50.00 | - | - |" in second


def wm_analysis(model: str, scores: dict[str, tuple[float, float, float]]) -> dict:
    """A memory_analysis.json of one Multi30k domain, two sentences; scores: condition -> (BLEU, chrF, length
    ratio)."""
    from inference.analyses.memory_content import MemoryRecord, memory_content_summary

    summary = memory_content_summary(
        [MemoryRecord("A dog runs.", ["▁dog", "▁dog"]), MemoryRecord("Two men sit.", ["▁men"])]
    )
    domain = {
        "domain": "Multi30k captions",
        "sentences": 2,
        "mean_source_words": 3.0,
        **{metric: {c: s[i] for c, s in scores.items()} for i, metric in enumerate(("bleu", "chrf", "length_ratio"))},
        "summary": summary,
        "memory_length_counts": [0, 1, 1],
    }
    return {"model": model, "max_sentences": 2, "domains": {"test_2016_flickr": domain}}


def write_json(path: Path, content: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))


def test_working_memory_tables_come_from_the_memory_analysis(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    write_json(
        checkpoints / "working_memory_de_en" / "memory_analysis.json",
        wm_analysis(
            "working_memory_de_en",
            {"memory": (31.0, 55.5, 0.98), "masked": (29.5, 54.25, 1.0125), "no_memory": (12.25, 40.0, 1.5)},
        ),
    )
    text = write_results(checkpoints, tmp_path / "results.md", tmp_path / "none.md").read_text()
    assert "| model | Multi30k captions: BLEU | chrF | length ratio |" in text
    assert (
        "| working memory | 31.00 | 55.50 | 0.980 |" in text
        and "| working memory, masked | 29.50 | 54.25 | 1.012 |" in text
        and "| working memory, size 0 at inference | 12.25 | 40.00 | 1.500 |" in text
    )
    assert "| working_memory_de_en | Multi30k captions | 2 | 3.0 | 1.50 | 0.00 / 0.50 | 1.00 / 1 |" in text
    assert "working_memory_ru_en: not trained or not analysed yet." in text
    assert "short_schedule/working_memory_de_en" not in text  # a shorter run without its analysis is not shown


def differences_record(bleu: tuple[float, float, float], chrf: tuple[float, float, float]) -> dict:
    """A domain's "differences" record with the same interval for both lesions: (difference, low, high) per metric."""
    return {
        lesion: {
            m: {"difference": d, "low": lo, "high": hi, "p_value": 0.01}
            for m, (d, lo, hi) in zip(METRICS, (bleu, chrf))
        }
        for lesion in ("masked", "no_memory")
    }


def test_each_working_memory_lesion_gets_its_paired_difference_per_domain(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    scores = {"memory": (26.0, 43.0, 0.95), "masked": (25.5, 42.5, 0.9), "no_memory": (26, 43, 0.95)}
    analysis = wm_analysis("working_memory_ru_en", scores)
    captions = analysis["domains"]["test_2016_flickr"]
    news = {**captions, "domain": "WMT news"}
    analysis["domains"]["test_news"] = news
    captions["differences"] = differences_record((-0.5, -0.9, -0.125), (-0.5, -1.0, 0.004))
    news["differences"] = differences_record((0.25, -0.5, 1.0), (2.0, 1.5, 2.5))
    captions["differences"]["no_memory"]["bleu"] |= {"difference": 0.0, "low": 0.0, "high": 0.0, "p_value": 1.0}
    write_json(checkpoints / "working_memory_ru_en" / "memory_analysis.json", analysis)
    text = write_results(checkpoints, tmp_path / "results.md", tmp_path / "none.md").read_text()
    assert "| lesion minus working memory | Multi30k captions: BLEU | chrF | WMT news: BLEU | chrF |" in text
    assert (
        "| working memory, masked | -0.50 [-0.90, -0.12] p=0.010 | -0.50 [-1.00, +0.00] p=0.010 "
        "| +0.25 [-0.50, +1.00] p=0.010 | +2.00 [+1.50, +2.50] p=0.010 |"
    ) in text
    assert (
        "| working memory, size 0 at inference | +0.00 [+0.00, +0.00] p=1.000 | -0.50 [-1.00, +0.00] p=0.010 "
        "| +0.25 [-0.50, +1.00] p=0.010 | +2.00 [+1.50, +2.50] p=0.010 |"
    ) in text
    del news["differences"]  # an analysis that lacks them in one domain (it predates them): no table
    write_json(checkpoints / "working_memory_ru_en" / "memory_analysis.json", analysis)
    text = write_results(checkpoints, tmp_path / "results.md", tmp_path / "none.md").read_text()
    assert "lesion minus working memory" not in text


def test_the_shorter_working_memory_run_gets_its_own_table(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    short = checkpoints / "short_schedule"
    write_json(
        short / "working_memory_de_en" / "memory_analysis.json",
        wm_analysis(
            "working_memory_de_en",
            {"memory": (29.0, 52.0, 1.0), "masked": (30.5, 53.0, 0.95), "no_memory": (28.75, 51.0, 1.1)},
        ),
    )
    text = write_results(checkpoints, tmp_path / "results.md", tmp_path / "none.md").read_text()
    shipped, shorter = text.split("**short_schedule/working_memory_de_en** (2 sentences per domain at most)")
    assert "working_memory_de_en: not trained or not analysed yet." in shipped
    assert "| working memory, masked | 30.50 | 53.00 | 0.950 |" in shorter
    assert "| short_schedule/working_memory_de_en | Multi30k captions | 2 |" in shorter


def test_a_memory_analysis_without_chrf_shows_its_bleu_alone(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    analysis = wm_analysis(
        "working_memory_de_en", {"memory": (31.0, 0, 0), "masked": (29.5, 0, 0), "no_memory": (9, 0, 0)}
    )
    for domain in analysis["domains"].values():
        del domain["chrf"], domain["length_ratio"]
    write_json(checkpoints / "working_memory_de_en" / "memory_analysis.json", analysis)
    text = write_results(checkpoints, tmp_path / "results.md", tmp_path / "none.md").read_text()
    assert "| working memory | 31.00 | - | - |" in text and "| working memory, masked | 29.50 | - | - |" in text


def test_ff_tables_come_from_the_ff_analysis(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    (checkpoints / "language_model").mkdir(parents=True)
    splits = ["enwiki_val", "wikitext2_valid", "wikitext2_test", "wikitext103_valid", "wikitext103_test"]
    (checkpoints / "language_model" / "metrics.json").write_text(
        json.dumps(
            {
                "perplexity": {s: 40.0 + i for i, s in enumerate(splits)},
                "word_perplexity": {s: 100.0 + i for i, s in enumerate(splits)},
                "train": {"steps": 800, "seconds": 3600},
            }
        )
    )
    agreement = {
        "layer": "layers.5.ff",
        "keys_with_triggers": 760,
        "agreement": 0.125,
        "baseline_agreement": 0.0025,
        "any_trigger_agreement": 0.5,
        "trigger_token_agreement": 0.01,
        "median_rank": 42.0,
        "baseline_median_rank": 3000.0,
        "rank_below_10": 0.3,
        "baseline_rank_below_10": 0.01,
    }
    aggregation = {
        "layer": "layers.5.ff",
        "predictions": 100,
        "mean_active_memories": 55.25,
        "residual_wins": 0.5,
        "ff_wins": 0.05,
        "all_agree": 0.3,
        "composition": 0.15,
        "zero_agreement": 0.7,
        "output_zero_agreement": 0.75,
        "residual_agrees_with_final": 0.8,
    }
    (checkpoints / "language_model" / "ff_analysis.json").write_text(
        json.dumps(
            {
                "model": "language_model",
                "mining": {
                    "corpus": "enwiki train, a seeded sample of 50,000 sentences",
                    "sentences": 50000,
                    "top_k": 50,
                },
                "agreement": [agreement],
                "aggregation": {"sentences": 2000, "layers": [aggregation]},
            }
        )
    )
    text = write_results(checkpoints, tmp_path / "results.md", tmp_path / "reading.md").read_text()
    assert (
        "| language_model | 100.00 (40.00) | 101.00 (41.00) | 102.00 (42.00) | 103.00 (43.00) | 104.00 (44.00) "
        "| 800 | 60.00 |" in text
    )
    assert (
        "- language_model: mined on enwiki train, a seeded sample of 50,000 sentences "
        "(50,000 sentences, top 50 per key); aggregation on 2,000 held-out sentences" in text
    )
    assert "| language_model | layers.5.ff | 760 | 12.5% (0.2%) | 50.0% | 42 (3000) | 30.0% (1.0%) |" in text
    assert "| language_model | layers.5.ff | 55.2 | 70.0% | 50.0% | 5.0% | 30.0% | 15.0% | 80.0% |" in text


def test_comparison_tables_come_from_the_stored_outputs(tmp_path, synthetic_data_dir, tiny_config):
    """End to end on tiny checkpoints: train, store the test outputs, regenerate the document."""
    import sacrebleu

    from training.cli import main
    from training.data.corpora import CORPORA
    from training.evaluation.outputs import AS_TRAINED, memory_condition, read_outputs
    from training.loop.translation_run import run_training

    checkpoints = tmp_path / "checkpoints"
    runs = (
        ("transformer", 3, 0),
        ("short_schedule/transformer", 1, 0),
        ("memtransformer_5", 3, 1),
        ("memtransformer_10", 1, 1),
        ("short_schedule/memtransformer_5", 1, 2),
    )
    for name, epochs, seed in runs:  # different models under those names; the baseline on two schedules
        config = tiny_config(epochs=epochs, seed=seed)
        run_training(config, synthetic_data_dir, checkpoints / name, tmp_path / name, device="cpu")
        assert main(["outputs", str(checkpoints / name), "--data-dir", str(synthetic_data_dir), "--device", "cpu"]) == 0
    out, reading = tmp_path / "results.md", tmp_path / "reading.md"
    args = ["--checkpoints", str(checkpoints), "--out", str(out), "--reading", str(reading)]
    assert main(["results", *args, "--data-dir", str(synthetic_data_dir)]) == 0
    text = out.read_text()

    references = [r for _, r in CORPORA["multi30k"].read(synthetic_data_dir)["test_2016_flickr"]]
    variant = read_outputs(checkpoints / "memtransformer_5")["outputs"]
    baseline = read_outputs(checkpoints / "transformer")["outputs"][AS_TRAINED]
    bleu = sacrebleu.corpus_bleu(variant[AS_TRAINED], [references])
    chrf = sacrebleu.corpus_chrf(variant[AS_TRAINED], [references]).score
    bleu_difference = bleu.score - sacrebleu.corpus_bleu(baseline, [references]).score
    chrf_difference = chrf - sacrebleu.corpus_chrf(baseline, [references]).score
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| MemTransformer 5 | 3 | ")]
    cells = next(cells for cells in rows if len(cells) == 7)  # label, epochs, BLEU, chrF, ratio, 2 differences
    assert cells[2:5] == [f"{bleu.score:.2f}", f"{chrf:.2f}", f"{bleu.sys_len / bleu.ref_len:.3f}"]
    assert cells[5].startswith(f"{bleu_difference:+.2f} [") and " p=" in cells[5]
    assert cells[6].startswith(f"{chrf_difference:+.2f} [") and chrf_difference != 0  # two seeds: two models
    # a 1-epoch variant is compared with the 1-epoch baseline, not the 3-epoch one
    short = read_outputs(checkpoints / "short_schedule" / "transformer")["outputs"][AS_TRAINED]
    one_epoch = read_outputs(checkpoints / "memtransformer_10")["outputs"][AS_TRAINED]
    expected = sacrebleu.corpus_bleu(one_epoch, [references]).score - sacrebleu.corpus_bleu(short, [references]).score
    row = next(line for line in text.splitlines() if line.startswith("| MemTransformer 10 | 1 | "))
    assert row.split(" | ")[5].startswith(f"{expected:+.2f} [")
    # a shorter run kept in short_schedule joins Table 1 against the baseline's shorter run; that one is a reference
    shorter = read_outputs(checkpoints / "short_schedule" / "memtransformer_5")["outputs"][AS_TRAINED]
    expected = sacrebleu.corpus_bleu(shorter, [references]).score - sacrebleu.corpus_bleu(short, [references]).score
    row = next(line for line in text.splitlines() if line.startswith("| MemTransformer 5, 1 epoch | 1 | "))
    assert row.split(" | ")[5].startswith(f"{expected:+.2f} [")
    reference = next(line for line in text.splitlines() if line.startswith("| Transformer (baseline), 1 epoch | 1 | "))
    assert reference.endswith(" | - | - |")
    # the training-length table: the 3-epoch baseline against its 1-epoch run
    longer = sacrebleu.corpus_bleu(baseline, [references]).score - sacrebleu.corpus_bleu(short, [references]).score
    row = next(line for line in text.splitlines() if line.startswith("| Transformer (baseline) | 3 (against 1) | "))
    assert row.split(" | ")[5].startswith(f"{longer:+.2f} [")
    lesion = sacrebleu.corpus_bleu(variant[memory_condition(0)], [references]).score
    assert any(line.startswith(f"| MemTransformer 5 | 0 | {lesion:.2f} | ") for line in text.splitlines())
    assert "| MemTransformer 5 | 2 (trained) | " in text  # the tiny config trains 2 slots
    # the short-schedule lesions: the 1-epoch run at size 0 against its own trained size, not the shipped run's
    shorter = read_outputs(checkpoints / "short_schedule" / "memtransformer_5")["outputs"]
    short_lesion = sacrebleu.corpus_bleu(shorter[memory_condition(0)], [references]).score
    short_trained = sacrebleu.corpus_bleu(shorter[AS_TRAINED], [references]).score
    row = next(line for line in text.splitlines() if line.startswith("| MemTransformer 5, 1 epoch | 0 | "))
    assert row.split(" | ")[2] == f"{short_lesion:.2f}"
    assert row.split(" | ")[5].startswith(f"{short_lesion - short_trained:+.2f} [")
    assert "| MemTransformer 5, 1 epoch | 2 (trained) | " in text
    # Table 3: each chain's trained stage scored from its stored outputs, the length ratio with them
    table_3 = text[text.index("## Table 3") : text.index("## Working memory")]
    shipped_chain, shorter_chain = table_3.split("Grown from `checkpoints/short_schedule/memtransformer_5`:")
    for chain, stage in ((shipped_chain, variant), (shorter_chain, shorter)):
        bleu = sacrebleu.corpus_bleu(stage[AS_TRAINED], [references])
        chrf = sacrebleu.corpus_chrf(stage[AS_TRAINED], [references]).score
        trained = next(line for line in chain.splitlines() if line.startswith("| trained | 5 | "))
        assert trained.endswith(f" | {bleu.score:.2f} | {chrf:.2f} | {bleu.sys_len / bleu.ref_len:.3f} | 19.17 |")
    assert "Signatures: BLEU `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in text


def test_short_schedule_lesion_rows_are_the_memory_models_with_lesion_outputs(tmp_path):
    """Which shorter runs join Table 2, and how they are labelled (no corpus needed: nothing is scored)."""
    import gzip

    from inference.core.checkpoint import FORMAT_VERSION
    from training.evaluation.comparisons import Comparisons
    from training.evaluation.outputs import AS_TRAINED, OUTPUTS_FILE, memory_condition
    from training.report.comparison_tables import short_schedule_labels

    def short_run(name: str, memory_size: int, conditions: list[str], epochs: int | None) -> None:
        folder = tmp_path / "short_schedule" / name
        folder.mkdir(parents=True)
        variant = "memtransformer" if memory_size else "transformer"
        model = {"family": "memory_transformer", "variant": variant, "memory_size": memory_size}  # others: defaults
        (folder / "config.json").write_text(json.dumps({"format_version": FORMAT_VERSION, "model": model}))
        train = {} if epochs is None else {"epochs": epochs}
        (folder / "metrics.json").write_text(json.dumps({"train": train}))
        record = {"split": "test_2016_flickr", "sentences": 1, "outputs": {c: ["a"] for c in conditions}}
        (folder / OUTPUTS_FILE).write_bytes(gzip.compress(json.dumps(record).encode()))

    short_run("with_lesions", 10, [AS_TRAINED, memory_condition(0)], 4)
    short_run("no_epochs", 10, [AS_TRAINED, memory_condition(0)], None)
    short_run("one_epoch", 10, [AS_TRAINED, memory_condition(0)], 1)
    short_run("no_lesions", 10, [AS_TRAINED], 4)
    short_run("no_memory", 0, [AS_TRAINED, memory_condition(0)], 4)
    models = {name: name.upper() for name in ("with_lesions", "no_epochs", "one_epoch", "no_lesions", "no_memory")}
    comparisons, listed = Comparisons(tmp_path), {**models, "never_trained": "X"}
    assert short_schedule_labels(comparisons, listed, lesioned=True) == {
        "short_schedule/with_lesions": "WITH_LESIONS, 4 epochs",
        "short_schedule/no_epochs": "NO_EPOCHS, shorter run",
        "short_schedule/one_epoch": "ONE_EPOCH, 1 epoch",
    }
    assert short_schedule_labels(comparisons, listed, lesioned=False) == {  # Table 1: every shorter run
        "short_schedule/with_lesions": "WITH_LESIONS, 4 epochs",
        "short_schedule/no_epochs": "NO_EPOCHS, shorter run",
        "short_schedule/one_epoch": "ONE_EPOCH, 1 epoch",
        "short_schedule/no_lesions": "NO_LESIONS, 4 epochs",
        "short_schedule/no_memory": "NO_MEMORY, 4 epochs",
    }


def test_pairs_the_paper_ranks_compare_runs_trained_as_long(tmp_path, synthetic_data_dir, tiny_config):
    """A pair's row is the first run minus the second on the same sentences, and only where both ran as long."""
    import sacrebleu

    from training.data.corpora import CORPORA
    from training.evaluation.comparisons import Comparisons
    from training.evaluation.outputs import AS_TRAINED, read_outputs
    from training.loop.translation_run import run_training, store_outputs
    from training.report.comparison_tables import pairs_against

    checkpoints = tmp_path / "checkpoints"
    runs = (("a", 1, 0), ("b", 1, 1), ("short_schedule/a", 1, 2), ("short_schedule/b", 2, 3))
    for name, epochs, seed in runs:  # the shorter runs differ in epochs: no row for them
        config = tiny_config(epochs=epochs, seed=seed)
        run_training(config, synthetic_data_dir, checkpoints / name, tmp_path / name, device="cpu")
        store_outputs(checkpoints / name, synthetic_data_dir, "cpu", log=lambda _: None)
    lines = pairs_against(Comparisons(checkpoints, synthetic_data_dir), [("a", "b")], {"a": "A", "b": "B"})

    references = [r for _, r in CORPORA["multi30k"].read(synthetic_data_dir)["test_2016_flickr"]]
    a, b = (read_outputs(checkpoints / name)["outputs"][AS_TRAINED] for name in ("a", "b"))
    expected = sacrebleu.corpus_bleu(a, [references]).score - sacrebleu.corpus_bleu(b, [references]).score
    rows = [line.split(" | ") for line in lines if line.startswith("| A | B | ")]
    assert len(rows) == 1 and rows[0][2] == "1"
    assert rows[0][6].startswith(f"{expected:+.2f} [") and " p=" in rows[0][6]


def test_a_task_run_with_another_cache_gets_its_own_column():
    """Two seeds of Transformer-XL with a cache of 60 beside one of the cache of 8, at 6 segments, 6,000 steps; a
    run from before `memory` was recorded counts as the default 8."""

    def run(carry: str, seed: int, accuracy: float, **memory: int) -> dict:
        return {"task": "copy", "steps": 6000, "segments": 6, "carry": carry, "seed": seed, "best_step": 900,
                "validation_char_accuracy": accuracy, "test": {"char_accuracy": accuracy, "answer_accuracy": 0.5},
                "train_seconds": 60.0, "threads": 1, **memory}  # fmt: skip

    groups = segment_tasks.grouped(
        {"a": run("xl", 1, 0.99, memory=60), "b": run("xl", 2, 0.97, memory=60), "c": run("xl", 1, 0.13)}
    )
    header, _, row = segment_tasks.task_table(groups, "copy", 6000)
    assert header.startswith("| segments | no memory | Transformer-XL | RMT | Transformer-XL, cache 60 |")
    assert row.startswith("| 6 | - | 0.13 (seed 1) | - | 0.98 ± 0.01 (seeds 1-2) |")  # mean 0.98, sd 0.0141
    assert "| copy, 6 seg, Transformer-XL, cache 60 | 2 | 6000 | 900 |" in "\n".join(segment_tasks.runs_table(groups))


def test_a_longer_cache_is_paired_with_the_default_run_of_its_seed():
    """Per-sample hits of 4 samples of 2 target characters: cache 60 all right, cache 8 [1, 0, 2, 1] right; the
    difference of per-character accuracy is the mean of [0.5, 1, 0, 0.5] = +0.5."""

    def run(memory: int, steps: int, hits: list[int]) -> dict:
        test = {"char_accuracy": sum(hits) / 8, "answer_accuracy": 0.0, "sample_char_hits": hits}
        return {"task": "reverse", "steps": steps, "segments": 9, "carry": "xl", "memory": memory, "seed": 1,
                "best_step": 100, "validation_char_accuracy": 0.5, "test": test, "train_seconds": 1.0,
                "threads": 1}  # fmt: skip

    groups = segment_tasks.grouped({"long": run(60, 6000, [2, 2, 2, 2]), "short": run(8, 2000, [1, 0, 2, 1])})
    (line,) = [line for line in segment_tasks.memory_differences(groups) if line.startswith("- ")]
    assert line.startswith(
        "- reverse, 9 segments, seed 1: Transformer-XL, cache 60 (6000 steps) − Transformer-XL (2000 steps): +0.5000 ["
    )


def test_rmt_is_paired_with_transformer_xl_of_its_seed_and_a_clean_separation_gets_its_chance():
    """Per-sample hits of 4 samples of 2 target characters. Seed 1: RMT [2, 2, 2, 1], Transformer-XL [1, 0, 2, 1]:
    the mean of [0.5, 1, 0, 0] = +0.375. Two seeds each, every RMT seed above every Transformer-XL seed: the chance
    of that ordering under no difference is 1 / C(4, 2) = 1/6. A no-memory run and another budget are left out."""

    def run(carry: str, seed: int, hits: list[int], steps: int = 8000) -> dict:
        test = {"char_accuracy": sum(hits) / 8, "answer_accuracy": 0.0, "sample_char_hits": hits}
        return {"task": "reverse", "steps": steps, "segments": 6, "carry": carry, "seed": seed, "best_step": 100,
                "validation_char_accuracy": 0.5, "test": test, "train_seconds": 1.0, "threads": 1}  # fmt: skip

    groups = segment_tasks.grouped({
        "r1": run("rmt", 1, [2, 2, 2, 1]), "x1": run("xl", 1, [1, 0, 2, 1]),
        "r2": run("rmt", 2, [2, 2, 1, 1]), "x2": run("xl", 2, [1, 1, 1, 1]),
        "none": run("none", 1, [0, 0, 0, 0]), "short": run("rmt", 1, [0, 0, 0, 0], steps=2000),
    })  # fmt: skip
    lines = [line for line in segment_tasks.carry_differences(groups) if line.startswith("- ")]
    assert len(lines) == 3
    assert lines[0].startswith("- reverse, 6 segments, 8000 steps, seed 1: RMT − Transformer-XL +0.3750 [")
    assert lines[1].startswith("- reverse, 6 segments, 8000 steps, seed 2: RMT − Transformer-XL +0.2500 [")
    assert lines[2] == (
        "- reverse, 6 segments, 8000 steps: every RMT seed (2) above every Transformer-XL seed (2); "
        "p = 0.167 (one-sided exact rank test)"
    )
    groups[("reverse", 8000, 6, ("xl", 8))][1]["test"]["char_accuracy"] = 0.9  # a Transformer-XL seed above one RMT's
    assert not any("every RMT seed" in line for line in segment_tasks.carry_differences(groups))
