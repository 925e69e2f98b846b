"""The project's packages import in layers: no import circle anywhere (counting imports inside functions and
under TYPE_CHECKING, which Python forgives but a reader does not), nothing in training/ imports app/, and
inference/ imports neither. The graph is read from the source with `ast`, so no module is executed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from inference.core.places import REPO_ROOT

PACKAGES = ("inference", "training", "app", "memlens_cli", "benchmarks")


def module_files(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `packages` under `root` (a package is its __init__)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_names(path: Path, module: str) -> set[str]:
    """Every dotted name the file imports, wherever the import statement stands; relative imports resolved."""
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # `from package import module`
    return names


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (a name resolves to the longest module it starts with)."""

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in modules.items():
        targets = {resolve(name) for name in imported_names(path, module)}
        graph[module] = {target for target in targets if target and target != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The imports between the subpackages of `package` (inference.core, inference.families, ...): a module stands
    for the subpackage it is in, and imports inside one subpackage are left out."""

    def subpackage(module: str) -> str | None:
        parts = module.split(".")
        return ".".join(parts[:2]) if parts[0] == package and len(parts) > 2 else None

    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if (source := subpackage(module)) is not None:
            packages.setdefault(source, set())
            for target in targets:
                if (into := subpackage(target)) is not None and into != source:
                    packages[source].add(into)
                    packages.setdefault(into, set())
    return packages


def crossings(graph: dict[str, set[str]], lower: str, upper: tuple[str, ...]) -> list[str]:
    """Imports from modules of package `lower` into any of `upper`, as "importer -> imported"."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == lower
        for target in targets
        if target.split(".")[0] in upper
    )


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(module_files(REPO_ROOT, PACKAGES))


def test_no_import_circles(graph):
    assert cycles(graph) == []


def test_no_circle_between_the_subpackages_of_inference(graph):
    """core below families and analyses, runs above both: a family that needs an analysis, or an analysis that
    needs a run, closes a circle here even where no two modules import each other."""
    assert cycles(package_graph(graph, "inference")) == []


def test_training_does_not_import_the_app(graph):
    assert crossings(graph, "training", ("app",)) == []


def test_inference_imports_neither_training_nor_the_app(graph):
    assert crossings(graph, "inference", ("app", "training")) == []


def write_package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_checks_see_circles_through_functions_type_checking_and_relative_imports(tmp_path):
    """The checks can fail: a circle closed by an import inside a function, one closed under TYPE_CHECKING by a
    relative import, and a forbidden crossing, in a package written here."""
    write_package(
        tmp_path,
        {
            "inference/__init__.py": "",
            "inference/low.py": "def f():\n    from inference.high import g\n",
            "inference/high.py": "from inference import low\n",
            "inference/core/__init__.py": "",
            "inference/core/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
            "inference/core/b.py": "from inference.core.a import A\nimport training.run\n",
            "training/__init__.py": "",
            "training/run.py": "",
        },
    )
    graph = import_graph(module_files(tmp_path, ("inference", "training")))
    assert cycles(graph) == [["inference.core.a", "inference.core.b"], ["inference.high", "inference.low"]]
    assert crossings(graph, "inference", ("training",)) == ["inference.core.b -> training.run"]
    assert graph["inference.high"] == {"inference", "inference.low"}


def test_the_package_check_sees_a_circle_no_two_modules_close(tmp_path):
    """families.model -> analyses.one -> analyses.two -> families.other: no module circle, a package circle."""
    write_package(
        tmp_path,
        {
            "inference/__init__.py": "",
            "inference/families/__init__.py": "",
            "inference/families/model.py": "from inference.analyses.one import f\n",
            "inference/families/other.py": "",
            "inference/analyses/__init__.py": "",
            "inference/analyses/one.py": "from inference.analyses import two\n",
            "inference/analyses/two.py": "from inference.families.other import g\n",
        },
    )
    graph = import_graph(module_files(tmp_path, ("inference",)))
    assert cycles(graph) == []
    assert cycles(package_graph(graph, "inference")) == [["inference.analyses", "inference.families"]]
