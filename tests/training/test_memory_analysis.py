"""The memory-content study of a working-memory checkpoint, end to end on a
tiny model and generated data: every domain gets its BLEU, chrF and length-ratio lesions, memory
lengths and analyses, and the CLI writes them beside the checkpoint."""

from __future__ import annotations

import gzip
import json

from inference.core.checkpoint import save_checkpoint
from tests.conftest import TINY_MEMORY, make_tiny_working_memory
from training.cli import main


def test_memory_analysis_covers_every_domain(tmp_path, synthetic_data_dir, tiny_tokenizer):
    news = tmp_path / "data" / "opus_mt_testsets" / "testsets" / "deu-eng"
    news.mkdir(parents=True)
    for language, lines in (
        ("deu", ["ein Hund spielt im Park", "zwei Frauen lesen"]),
        ("eng", ["a dog plays in the park", "two women read"]),
    ):
        with gzip.open(news / f"newstest2014.{language}.gz", "wt", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines)
    for folder in synthetic_data_dir.iterdir():
        (tmp_path / "data" / folder.name).symlink_to(folder)
    loaded = make_tiny_working_memory(tiny_tokenizer)
    folder = save_checkpoint(tmp_path / "tiny_wm", loaded.model, loaded.tokenizer, meta={"corpus": "multi30k"})

    assert (
        main(
            [
                "memory-analysis",
                str(folder),
                "--data-dir",
                str(tmp_path / "data"),
                "--device",
                "cpu",
                "--max-sentences",
                "5",
            ]
        )
        == 0
    )
    analysis = json.loads((folder / "memory_analysis.json").read_text())
    assert list(analysis["domains"]) == ["test_2016_flickr", "newstest2014"]
    for domain, sentences in (("test_2016_flickr", 5), ("newstest2014", 2)):
        found = analysis["domains"][domain]
        assert found["sentences"] == sentences == sum(found["memory_length_counts"])
        assert len(found["memory_length_counts"]) == TINY_MEMORY + 1
        for metric in ("bleu", "chrf", "length_ratio"):
            assert set(found[metric]) == {"memory", "masked", "no_memory"}
        assert found["summary"]["n_sentences"] == sentences and len(found["examples"]) == min(sentences, 5)
