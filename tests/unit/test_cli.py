"""The memlens command line on a folder of tiny checkpoints."""

import subprocess
import sys
import types
from pathlib import Path

import pytest

from inference.core.checkpoint import save_checkpoint
from memlens_cli.main import main
from tests.conftest import make_tiny


def test_models_lists_good_and_broken(tiny_tokenizer, tmp_path, capsys):
    loaded = make_tiny("memtransformer", tiny_tokenizer)
    save_checkpoint(tmp_path / "tiny_mem", loaded.model, loaded.tokenizer, metrics={"bleu": {"test_2016_flickr": 12.5}})
    (tmp_path / "empty").mkdir()
    assert main(["--checkpoints", str(tmp_path), "--device", "cpu", "models"]) == 0
    out = capsys.readouterr().out
    assert "tiny_mem" in out and "memory_transformer/memtransformer" in out and "BLEU test_2016_flickr 12.50" in out
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
    assert main(args + ["--lesion", '{"kind": "mask_memory"}', "ein Hund"]) == 0
    capsys.readouterr()
    forced = tiny_tokenizer.encode("Katze")[0]  # a lesion given as JSON reaches the run: this is the whole memory
    assert main(args + ["--lesion", f'{{"kind": "force_memory", "tokens": [{forced}]}}', "ein Hund"]) == 0
    assert capsys.readouterr().out.rstrip("\n").endswith(f"\t[memory: {tiny_tokenizer.display_tokens([forced])[0]}]")
    assert main(args + ["--lesion", '{"kind": "force_memory", "tokens": []}', "ein Hund"]) == 2
    assert "--lesion: Tuple should have at least 1 item" in capsys.readouterr().err
    assert main(args + ["--knockout", "0", "--", "ein Hund"]) == 2
    assert "knockout_slots does not apply to this working_memory model; it takes memory_size, scale" in (
        capsys.readouterr().err
    )


def test_models_shows_a_language_model_with_its_perplexity(tiny_tokenizer, tmp_path, capsys):
    from tests.conftest import make_tiny_language_model

    save_checkpoint(
        tmp_path / "tiny_lm",
        make_tiny_language_model(tiny_tokenizer),
        tiny_tokenizer,
        metrics={"word_perplexity": {"wikitext2_test": 300.0, "wikitext103_test": 250.25}},
    )
    assert main(["--checkpoints", str(tmp_path), "--device", "cpu", "models"]) == 0
    out = capsys.readouterr().out
    assert "language_model" in out and "word perplexity wikitext103_test 250.2" in out and "wikitext2_test" not in out


def test_translate_with_beam_search_decodes_by_beam(tiny_tokenizer, tmp_path, capsys):
    """--beam N prints what beam_search gives; --length-penalty alone and values out of range are refused."""
    from inference.core.decoding import strip_after_eos
    from inference.core.tracing import encode_sources
    from inference.families.memory_transformer.decoding import beam_search

    loaded = make_tiny("memtransformer", tiny_tokenizer, seed=1)
    save_checkpoint(tmp_path / "tiny_mem", loaded.model, loaded.tokenizer)
    args = ["--checkpoints", str(tmp_path), "--device", "cpu", "translate", "--model", "tiny_mem"]
    assert main(args + ["--beam", "3", "--length-penalty", "1.5", "ein Hund"]) == 0
    beam = beam_search(
        loaded.model, encode_sources(loaded, ["ein Hund"]), beam_size=3, max_new_tokens=128, length_penalty=1.5
    )
    expected = loaded.tokenizer.decode(strip_after_eos(beam, loaded.config.eos_id)[0])
    assert capsys.readouterr().out == f"ein Hund\t{expected}\n"
    assert main(args + ["--beam", "9", "ein Hund"]) == 2
    assert "--beam: Input should be less than or equal to 8" in capsys.readouterr().err
    assert main(args + ["--beam", "2", "--length-penalty", "inf", "ein Hund"]) == 2
    assert "--length-penalty: Input should be a finite number" in capsys.readouterr().err
    assert main(args + ["--length-penalty", "0.6", "ein Hund"]) == 2
    assert "give --beam N too" in capsys.readouterr().err


def test_beam_search_on_a_working_memory_model_says_why_not(tiny_tokenizer, tmp_path, capsys):
    from tests.conftest import make_tiny_working_memory

    loaded = make_tiny_working_memory(tiny_tokenizer)
    save_checkpoint(tmp_path / "tiny_wm", loaded.model, loaded.tokenizer)
    assert (
        main(
            [
                "--checkpoints",
                str(tmp_path),
                "--device",
                "cpu",
                "translate",
                "--model",
                "tiny_wm",
                "--beam",
                "2",
                "ein Hund",
            ]
        )
        == 2
    )
    assert "beam search does not apply to tiny_wm" in capsys.readouterr().err


def test_translate_names_a_broken_checkpoint(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["--checkpoints", str(tmp_path), "--device", "cpu", "translate", "--model", "empty", "x"]) == 2
    assert "checkpoint 'empty' is unavailable: config.json is missing" in capsys.readouterr().err
    assert (
        main(["--checkpoints", str(tmp_path), "--device", "cpu", "hooks", "--model", "../" + tmp_path.name + "/empty"])
        == 2
    )
    assert "no checkpoint named" in capsys.readouterr().err


def test_data_fetch_forwards_what_follows_fetch_to_the_data_fetcher(monkeypatch, capsys):
    calls = []
    fetcher = types.ModuleType("training.data.fetch")
    fetcher.main = lambda argv: calls.append(argv) or 7
    monkeypatch.setitem(sys.modules, "training.data.fetch", fetcher)
    assert main(["data", "fetch", "multi30k", "--data-dir", "/tmp/d"]) == 7
    assert main(["data", "fetch", "--help"]) == 7
    assert calls == [["multi30k", "--data-dir", "/tmp/d"], ["--help"]]
    assert main(["data", "--help"]) == 0 and "memlens data fetch" in capsys.readouterr().out
    assert main(["data", "multi30k"]) == 2 and "unknown action 'multi30k'" in capsys.readouterr().err


def test_data_fetch_list_reports_what_the_data_directory_lacks(tmp_path, capsys):
    assert main(["data", "fetch", "--list", "--data-dir", str(tmp_path)]) == 0
    listing = capsys.readouterr().out
    for corpus in ("multi30k", "opus_mt_testsets", "enwiki", "wikitext"):
        assert corpus in listing
    assert "missing" in listing


# What `memlens ... --help` must leave unloaded: torch, the web stack.
HEAVY_MODULES = ("torch", "fastapi", "uvicorn", "starlette")
HELP_PROBE = """
import runpy, sys
sys.argv = ["memlens", *sys.argv[1:]]
try:
    runpy.run_module("memlens_cli.main", run_name="__main__")
except SystemExit:
    pass
print("LOADED", *sorted(name for name in {heavy!r} if name in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv", [["--help"], ["translate", "--help"], ["models", "--help"], ["hooks", "--help"], ["serve", "--help"]]
)
def test_help_imports_neither_torch_nor_the_web_stack(argv):
    """`python -m memlens_cli.main ... --help` in a fresh interpreter: the help is printed and no heavy module
    was imported."""
    result = subprocess.run(
        [sys.executable, "-c", HELP_PROBE.format(heavy=HEAVY_MODULES), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert "usage: memlens" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == "LOADED"


def test_serve_cancels_requests_still_running_shortly_after_sigterm(monkeypatch, tmp_path):
    import uvicorn

    from app.server import server_options
    from memlens_cli.main import SHUTDOWN_SECONDS

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: calls.append(options))
    assert main(["--checkpoints", str(tmp_path), "serve", "--port", "8123"]) == 0
    assert calls == [server_options("127.0.0.1", 8123, timeout_graceful_shutdown=SHUTDOWN_SECONDS)]
    assert calls[0]["timeout_graceful_shutdown"] == SHUTDOWN_SECONDS and calls[0]["port"] == 8123
    assert SHUTDOWN_SECONDS <= 5
