"""The memlens command line on a folder of tiny checkpoints."""

from inference.checkpoint import save_checkpoint
from app.cli import main
from tests.conftest import make_tiny


def test_models_lists_good_and_broken(tiny_tokenizer, tmp_path, capsys):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    save_checkpoint(tmp_path / "tiny_mem", loaded.model, loaded.tokenizer, metrics={"bleu": {"test_2016_flickr": 12.5}})
    (tmp_path / "empty").mkdir()
    assert main(["--checkpoints", str(tmp_path), "--device", "cpu", "models"]) == 0
    out = capsys.readouterr().out
    assert "tiny_mem" in out and "memtransformer" in out and "BLEU test_2016_flickr 12.50" in out
    assert "empty" in out and "BROKEN: config.json is missing" in out


def test_translate_reports_bad_lesion_without_traceback(tiny_tokenizer, tmp_path, capsys):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    save_checkpoint(tmp_path / "tiny_mem", loaded.model, loaded.tokenizer)
    args = ["--checkpoints", str(tmp_path), "--device", "cpu", "translate", "--model", "tiny_mem"]
    assert main(args + ["ein Hund"]) == 0
    assert capsys.readouterr().out.startswith("ein Hund\t")
    assert main(args + ["--memory-size", "99", "ein Hund"]) == 2
    assert "out of range" in capsys.readouterr().err
    assert main(["--checkpoints", str(tmp_path), "translate", "--model", "nope", "x"]) == 2
    assert "no checkpoint named 'nope'" in capsys.readouterr().err


def test_translate_shows_working_memory_and_takes_its_lesions(tiny_tokenizer, tmp_path, capsys):
    from tests.conftest import make_tiny_working_memory

    loaded = make_tiny_working_memory(tiny_tokenizer)
    save_checkpoint(tmp_path / "tiny_wm", loaded.model, loaded.tokenizer)
    args = ["--checkpoints", str(tmp_path), "--device", "cpu", "translate", "--model", "tiny_wm", "--seed", "3"]
    assert main(args + ["ein Hund"]) == 0
    plain = capsys.readouterr().out
    assert plain.startswith("ein Hund\t") and "\t[memory: " in plain
    assert main(args + ["ein Hund"]) == 0 and capsys.readouterr().out == plain  # the seed fixes the memory
    assert main(args + ["--mask-memory", "ein Hund"]) == 0
    assert main(args + ["--knockout", "0", "--", "ein Hund"]) == 2
    assert "working-memory model has none" in capsys.readouterr().err


def test_models_shows_a_language_model_with_its_perplexity(tiny_tokenizer, tmp_path, capsys):
    from tests.conftest import make_tiny_language_model

    save_checkpoint(tmp_path / "tiny_lm", make_tiny_language_model(tiny_tokenizer), tiny_tokenizer,
                    metrics={"word_perplexity": {"wikitext2_test": 300.0, "wikitext103_test": 250.25}})
    assert main(["--checkpoints", str(tmp_path), "--device", "cpu", "models"]) == 0
    out = capsys.readouterr().out
    assert "language_model" in out and "word perplexity wikitext103_test 250.2" in out and "wikitext2_test" not in out
