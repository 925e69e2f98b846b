"""docs/results.md is rendered from metrics.json files, paper numbers beside ours."""

import json

from training.results import write_results


def test_results_tables_come_from_metrics(tmp_path):
    checkpoints = tmp_path / "checkpoints"
    for name, bleu, lesion in [
        ("transformer", 30.5, None),
        ("memtransformer_5", 28.0, None),
        ("memtransformer_5_finetuned", 29.5, None),
        ("memtransformer_10", 31.25, {"memory_size": [0, 2, 5, 10, 20, 30], "bleu": [10.0, 20.0, 25.0, 31.25, 28.0, 22.0]}),
    ]:
        (checkpoints / name).mkdir(parents=True)
        metrics = {"bleu": {"val": bleu + 1, "test_2016_flickr": bleu}, "chrf": {"test_2016_flickr": 50.0}, "train": {"epochs": 4, "seconds": 600}}
        if lesion:
            metrics["lesion"] = lesion
        (checkpoints / name / "metrics.json").write_text(json.dumps(metrics))
    reading = tmp_path / "reading.md"
    reading.write_text("Shapes agree.")
    text = write_results(checkpoints, tmp_path / "results.md", reading).read_text()
    assert "| Transformer (baseline) | 31.50 | 30.50 | 50.00 | 4 | 10 | 19.01 |" in text
    assert "| MemCtrl 20 | not trained yet |" in text
    assert "| control: fine-tuned, memory not grown | 5 | 8 | 29.50 | - |" in text
    assert "| MemTransformer 10 (ours) | 10.00 | 20.00 | 25.00 | **31.25** | 28.00 | 22.00 |" in text
    assert "| MemTransformer 10 (paper, base) | 11.75 | 15.91 | 18.22 | 25.07 | 12.39 | 7.87 |" in text
    assert text.rstrip().endswith("Shapes agree.")


def test_working_memory_tables_come_from_the_memory_analysis(tmp_path):
    from inference.analyses.memory_content import MemoryRecord, memory_content_summary

    checkpoints = tmp_path / "checkpoints"
    (checkpoints / "working_memory_de_en").mkdir(parents=True)
    (checkpoints / "transformer").mkdir()
    (checkpoints / "transformer" / "metrics.json").write_text(json.dumps({"bleu": {"test_2016_flickr": 30.0}, "chrf": {}}))
    summary = memory_content_summary([MemoryRecord("A dog runs.", ["▁dog", "▁dog"]), MemoryRecord("Two men sit.", ["▁men"])])
    analysis = {
        "model": "working_memory_de_en",
        "max_sentences": 2,
        "domains": {
            "test_2016_flickr": {"domain": "Multi30k captions", "sentences": 2, "mean_source_words": 3.0,
                                 "bleu": {"memory": 31.0, "masked": 29.5, "no_memory": 12.25}, "summary": summary,
                                 "memory_length_counts": [0, 1, 1]},
        },
    }
    (checkpoints / "working_memory_de_en" / "memory_analysis.json").write_text(json.dumps(analysis))
    text = write_results(checkpoints, tmp_path / "results.md", tmp_path / "none.md").read_text()
    assert "| Transformer, 4 epochs (the warm start) | 30.00 |" in text
    assert "| working memory | 31.00 |" in text and "| working memory, masked | 29.50 |" in text and "| working memory, size 0 at inference | 12.25 |" in text
    assert "| working_memory_de_en | Multi30k captions | 2 | 3.0 | 1.50 | 0.00 / 0.50 | 1.00 / 1 |" in text
    assert "working_memory_ru_en: not trained or not analysed yet." in text
