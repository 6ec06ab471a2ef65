"""The engine's layering, read from its import statements: stages orchestrate, packages compute.

A stage module may use any package but no other stage (what two stages share lives in a package, or on Project);
a package never reaches back into the stages or the pipeline; and no two modules import each other, directly or
round a longer loop. Imports inside functions count (they only defer the cycle); `if TYPE_CHECKING:` imports do
not (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import aeromap_engine

PACKAGE = Path(aeromap_engine.__file__).parent
ROOT = PACKAGE.name
STAGES = f"{ROOT}.stages"
PIPELINE = f"{ROOT}.pipeline"
# Orchestration: the stages, the pipeline that runs them and the command line that starts it.
ORCHESTRATION = (STAGES, PIPELINE, f"{ROOT}.cli")


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: at module level or inside functions, but not under TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imported_modules(name: str, is_package: bool, tree: ast.AST, known: set[str]) -> set[str]:
    """The engine's modules that module `name` imports (`from . import x` names module x when x is one)."""
    base = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()
    for node in import_nodes(tree):
        if isinstance(node, ast.Import):
            sources = [alias.name for alias in node.names]
        else:
            parent = ".".join(base[: len(base) - node.level + 1]) if node.level else ""
            source = ".".join(p for p in (parent, node.module or "") if p)
            sources = [f"{source}.{alias.name}" for alias in node.names] + [source]
        for source in sources:
            if source in known:
                targets.add(source)
                break
    return targets - {name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    known = set(files)
    return {name: imported_modules(name, path.name == "__init__.py", ast.parse(path.read_text()), known)
            for name, path in files.items()}


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def stage_to_stage(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if within(a, STAGES) and within(b, STAGES) and STAGES not in (a, b))


def package_to_orchestration(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if not any(within(a, o) for o in ORCHESTRATION) and any(within(b, o) for o in ORCHESTRATION))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_graph_sees_the_engine() -> None:
    graph = import_graph()
    assert f"{STAGES}.odm_orthophoto" in graph
    assert f"{ROOT}.project" in graph[PIPELINE]
    assert f"{STAGES}.split" in graph[PIPELINE]


def test_no_stage_imports_another_stage() -> None:
    assert stage_to_stage(import_graph()) == []


def test_no_package_imports_the_stages_or_the_pipeline() -> None:
    assert package_to_orchestration(import_graph()) == []


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def write_package(root: Path, files: dict[str, str]) -> Path:
    package = root / ROOT
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


CLEAN = {
    "__init__.py": "",
    "project.py": "from .atomic_files import read_json\n",
    "atomic_files.py": "import json\n",
    "pipeline.py": "from .project import Project\nfrom .stages import STAGE_NAMES, split\n",
    "stages/__init__.py": "from ..project import STAGE_NAMES\n",
    "stages/split.py": ("from typing import TYPE_CHECKING\nfrom ..dem.grid import Grid\n"
                        "if TYPE_CHECKING:\n    from ..pipeline import StageContext\n"),
    "stages/odm_dem.py": "from ..dem import grid\n",
    "dem/__init__.py": "",
    "dem/grid.py": "import numpy as np\n",
}


def test_a_clean_layout_passes(tmp_path: Path) -> None:
    graph = import_graph(write_package(tmp_path, CLEAN))
    assert graph[f"{ROOT}.stages.odm_dem"] == {f"{ROOT}.dem.grid"}
    assert stage_to_stage(graph) == [] and package_to_orchestration(graph) == [] and cycles(graph) == []


@pytest.mark.parametrize("name, text, check, expected", [
    ("stages/odm_dem.py", "from .split import Grid\n", stage_to_stage,
     [(f"{STAGES}.odm_dem", f"{STAGES}.split")]),
    ("stages/odm_dem.py", "from . import split\n", stage_to_stage, [(f"{STAGES}.odm_dem", f"{STAGES}.split")]),
    ("dem/grid.py", "def f():\n    from ..stages.odm_dem import x\n", package_to_orchestration,
     [(f"{ROOT}.dem.grid", f"{STAGES}.odm_dem")]),
    ("dem/grid.py", "from aeromap_engine import pipeline\n", package_to_orchestration,
     [(f"{ROOT}.dem.grid", PIPELINE)]),
    ("atomic_files.py", "def f():\n    from .project import Project\n", cycles,
     [[f"{ROOT}.atomic_files", f"{ROOT}.project"]]),
])
def test_a_violation_fails(tmp_path: Path, name: str, text: str, check, expected) -> None:
    graph = import_graph(write_package(tmp_path, {**CLEAN, name: CLEAN.get(name, "") + text}))
    assert check(graph) == expected
