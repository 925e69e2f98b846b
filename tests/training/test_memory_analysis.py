"""The memory-content study of a working-memory checkpoint, end to end on a
tiny model and generated data: every domain gets its BLEU, chrF and length-ratio lesions, memory
lengths and analyses, each lesion's paired difference from the model with memory (recomputed here from the stored
translations), and the CLI writes them beside the checkpoint."""

from __future__ import annotations

import gzip
import json

import pytest
import sacrebleu

from inference.core.checkpoint import save_checkpoint
from tests.conftest import TINY_MEMORY, make_tiny_working_memory
from training.cli import main
from training.data.corpora import CORPORA
from training.evaluation.outputs import read_outputs
from training.studies.memory_content import STUDY_OUTPUTS_FILE

NEWS = [("ein Hund spielt im Park", "a dog plays in the park"), ("zwei Frauen lesen", "two women read")]
METRICS = (("bleu", sacrebleu.corpus_bleu), ("chrf", sacrebleu.corpus_chrf))


def test_memory_analysis_covers_every_domain(tmp_path, synthetic_data_dir, tiny_tokenizer):
    news = tmp_path / "data" / "opus_mt_testsets" / "testsets" / "deu-eng"
    news.mkdir(parents=True)
    for language, lines in (("deu", [de for de, _ in NEWS]), ("eng", [en for _, en in NEWS])):
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
    stored = read_outputs(folder, STUDY_OUTPUTS_FILE)
    references = {
        "test_2016_flickr": [en for _, en in CORPORA["multi30k"].read(synthetic_data_dir)["test_2016_flickr"][:5]],
        "newstest2014": [en for _, en in NEWS],
    }
    measured = []
    for domain, reference in references.items():
        outputs = stored[domain]["outputs"]
        assert stored[domain]["sentences"] == len(reference) and {len(o) for o in outputs.values()} == {len(reference)}
        differences = analysis["domains"][domain]["differences"]
        assert set(differences) == {"masked", "no_memory"}
        for lesion in differences:
            for metric, score in METRICS:
                lesioned, with_memory = (score(outputs[c], [reference]).score for c in (lesion, "memory"))
                assert analysis["domains"][domain][metric][lesion] == pytest.approx(lesioned)
                assert differences[lesion][metric]["difference"] == pytest.approx(lesioned - with_memory, abs=1e-9)
                measured.append(lesioned - with_memory)
    assert sum(difference != 0 for difference in measured) >= 2  # the lesions change this model's translations
