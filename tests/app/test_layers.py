"""The layers stay apart: the web app never imports training (the `memlens` command in memlens_cli/ is the
one place that reaches both), and the inference core imports neither the web stack, Plotly, the app nor
training. Every import counts, those inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module an `import` or `from ... import` anywhere in the file names (relative imports resolved
    from the file's package under `root`)."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def offending_imports(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    """'file: module' for each import under ROOT/folder of a forbidden top-level package."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for module in sorted(imported_modules(path)):
            if module.split(".")[0] in forbidden:
                found.append(f"{path.relative_to(ROOT)}: {module}")
    return found


def test_app_never_imports_training():
    assert offending_imports("app", ("training",)) == []


def test_inference_imports_neither_the_web_stack_nor_plotly_nor_app_nor_training():
    assert offending_imports("inference", ("fastapi", "starlette", "plotly", "app", "training")) == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import training.data.translation\n", {"training.data.translation"}),
        ("def f():\n    from training.studies.ff_keys import read_triggers\n", {"training.studies.ff_keys"}),
        ("from . import data\n", {"app.routers", "app.routers.data"}),
        ("from ..services import runner\n", {"app.services", "app.services.runner"}),
    ],
)
def test_imports_are_found_at_any_depth_and_relative_ones_resolved(tmp_path, source, found):
    """The check itself: an import inside a function counts, and a relative import names its full module."""
    module = tmp_path / "app" / "routers" / "probe.py"
    module.parent.mkdir(parents=True)
    module.write_text(source, encoding="utf-8")
    assert found <= imported_modules(module, tmp_path)
