"""A family is one folder: nothing outside inference/families/<name>/ names
that family's classes, and the app and the templates never branch on a
family's name. Read from the source, so a new import or branch anywhere
fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from inference.core import family as registry

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ROOT / "inference" / "families"
# Every package whose code must stay family-neutral (tests of a family may name its classes).
NEUTRAL = ["app", "inference", "training", "benchmarks", "memlens_cli"]


def family_classes() -> dict[str, set[str]]:
    """Family folder -> the classes defined in it."""
    found = {}
    for folder in sorted(p for p in FAMILIES.iterdir() if (p / "__init__.py").exists()):
        classes = set()
        for path in folder.rglob("*.py"):
            classes |= {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)}
        found[folder.name] = classes
    return found


def named_classes(path: Path, classes: set[str]) -> list[str]:
    """Where a module names any of `classes`: imports and every other use of the name."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            hits += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name}" for a in node.names if a.name in classes
            ]
        elif isinstance(node, ast.Name) and node.id in classes:
            hits.append(f"{path.relative_to(ROOT)}:{node.lineno} names {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in classes:
            hits.append(f"{path.relative_to(ROOT)}:{node.lineno} names {node.attr}")
    return hits


def neutral_modules(outside: Path) -> list[Path]:
    return [
        path
        for package in NEUTRAL
        if (ROOT / package).exists()
        for path in (ROOT / package).rglob("*.py")
        if outside not in path.parents
    ]


@pytest.mark.parametrize("family", sorted(family_classes()))
def test_no_module_outside_a_family_folder_names_its_classes(family):
    classes = family_classes()[family]
    assert classes, f"the {family} folder defines no classes: the check would be empty"
    hits = [hit for path in neutral_modules(FAMILIES / family) for hit in named_classes(path, classes)]
    assert not hits, "\n".join(hits)


@pytest.mark.parametrize("package", ["app", "training"])
def test_the_app_and_training_never_import_a_family_folder(package):
    """They reach a family through the registry (inference.core.family) only."""
    hits = []
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("inference.families"):
                hits.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}")
            if isinstance(node, ast.Import):
                hits += [
                    f"{path.relative_to(ROOT)}:{node.lineno}"
                    for a in node.names
                    if a.name.startswith("inference.families")
                ]
    assert not hits, "\n".join(hits)


def family_names() -> list[str]:
    """Every registered family's name and variants, and every family folder's name."""
    variants = {variant for family in registry.families() for variant in family.variants}
    folders = {p.name for p in FAMILIES.iterdir() if (p / "__init__.py").exists()}
    return sorted({*registry.family_names(), *variants, *folders})


def test_app_and_templates_never_branch_on_a_family_name():
    """A family name may appear in the app's code or templates only where it is
    data (examples in the API schema), never in a comparison or a lookup."""
    names = family_names()
    assert "working_memory" in names and "memtransformer" in names  # the registry was read
    alternatives = "|".join(map(re.escape, names))
    quoted = re.compile(rf"""["']({alternatives})["']""")
    hits = []
    for path in [*(ROOT / "app").rglob("*.py"), *(ROOT / "templates").rglob("*.html")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if quoted.search(line) and not re.search(r"examples|json_schema_extra", line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "\n".join(hits)


def family_comparisons(path: Path, names: set[str]) -> list[str]:
    """Where a module compares something with a family's name (==, !=, in): a branch on a family."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        values = [
            c for side in sides for c in (side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side])
        ]
        hits += [
            f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno} compares with {c.value!r}"
            for c in values
            if isinstance(c, ast.Constant) and c.value in names
        ]
    return hits


def test_training_the_app_and_the_cli_never_compare_with_a_family_name():
    """Training reads what a family declares (its config section, its loss, its warm start) and the app what it
    can do: neither branches on which family a model is."""
    names = set(family_names())
    hits = [
        hit
        for package in ("training", "app", "memlens_cli")
        for path in (ROOT / package).rglob("*.py")
        for hit in family_comparisons(path, names)
    ]
    assert not hits, "\n".join(hits)


def test_the_check_sees_a_violation(tmp_path):
    """The checks above are not vacuous: a module that names a family class is found."""
    probe = tmp_path / "probe.py"
    probe.write_text("from x import WorkingMemoryTransformer\nisinstance(m, WorkingMemoryTransformer)\n")
    assert len(named_classes_at(probe)) == 2
    branch = tmp_path / "branch.py"
    branch.write_text('if config.family == "working_memory" or name in ("recurrent_memory", "other"):\n    pass\n')
    assert len(family_comparisons(branch, set(family_names()))) == 2


def named_classes_at(path: Path) -> list[str]:
    classes = set().union(*family_classes().values())
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            hits += [a.name for a in node.names if a.name in classes]
        elif isinstance(node, ast.Name) and node.id in classes:
            hits.append(node.id)
    return hits
