"""The README's and the docs' examples print what they show: every `$ memlens ...` command of the README's
"Command line" section, the Python session of its "Python" section and every Python session (```pycon) in
docs/*.md run on the shipped checkpoints (CPU), and their output is compared with the text shown under them."""

from __future__ import annotations

import doctest
import re
import shlex
from pathlib import Path

import pytest

from memlens_cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = README.parent / "docs"


def section(title: str) -> str:
    """The text of the README's `## title` section, up to the next `## ` heading."""
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {title}' section"
    return match.group(1)


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def shown_commands() -> list[tuple[list[str], str]]:
    """(arguments after `memlens`, the output shown under the command) for every `$ memlens` line."""
    examples: list[tuple[list[str], str]] = []
    for block in code_blocks(section("Command line"), "console"):
        for chunk in re.split(r"^\$ ", block, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            words = shlex.split(command)
            assert words[0] == "memlens", command
            examples.append((words[1:], output))
    return examples


COMMANDS = shown_commands()


@pytest.fixture
def shipped_checkpoints_on_cpu(monkeypatch):
    monkeypatch.setenv("MEMLENS_DEVICE", "cpu")
    monkeypatch.delenv("MEMLENS_CHECKPOINT_DIR", raising=False)
    monkeypatch.chdir(README.parent)


def test_the_readme_shows_greedy_and_beam_examples():
    arguments = [" ".join(argv) for argv, _ in COMMANDS]
    assert any("--beam" in a for a in arguments) and any("--beam" not in a for a in arguments)
    assert all(output.strip() for _, output in COMMANDS), "every command shows its output"


@pytest.mark.parametrize(("argv", "shown"), COMMANDS, ids=[" ".join(argv) for argv, _ in COMMANDS])
def test_command_prints_what_the_readme_shows(argv, shown, shipped_checkpoints_on_cpu, capsys):
    assert main(argv) == 0
    assert capsys.readouterr().out == shown


def run_session(session: str, name: str, path: Path) -> doctest.DocTest:
    """Run a shown Python session as a doctest; fails with doctest's report where an output differs."""
    test = doctest.DocTestParser().get_doctest(session, {}, name, str(path), 0)
    runner = doctest.DocTestRunner()
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
    return test


def test_python_session_prints_what_the_readme_shows(shipped_checkpoints_on_cpu):
    (session,) = code_blocks(section("Python"), "pycon")
    assert len(run_session(session, "README.md ## Python", README).examples) >= 10


DOC_SESSIONS = [
    (path, i, session)
    for path in sorted(DOCS.glob("*.md"))
    for i, session in enumerate(code_blocks(path.read_text(encoding="utf-8"), "pycon"))
]


def test_the_docs_show_python_sessions():
    assert {path.name for path, _, _ in DOC_SESSIONS} >= {"inference.md", "ff_memories.md"}


@pytest.mark.parametrize(
    ("path", "index", "session"), DOC_SESSIONS, ids=[f"{path.name}#{i}" for path, i, _ in DOC_SESSIONS]
)
def test_python_session_prints_what_the_doc_shows(path, index, session, shipped_checkpoints_on_cpu):
    assert run_session(session, f"docs/{path.name} session {index}", path).examples
