"""The engine's modules import each other in one direction: no circle, not even one that runs
through an import inside a function or under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

import workflows

ROOT = Path(workflows.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(
    path: Path, known: set[str], name: str | None = None
) -> Iterator[tuple[int, str]]:
    """(line, engine module) for every import in the file, wherever it stands (``name``: the
    module the file is, when it is not under the engine's folder)."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # "from . import x" may name a submodule x: count it as one when it is.
            targets = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            targets = targets or [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield node.lineno, target


def import_graph() -> dict[str, dict[str, int]]:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    known = set(files)
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges = graph.setdefault(name, {})
        for line, target in imported_modules(path, known):
            edges.setdefault(target, line)
    return graph


def find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in graph.get(node, {}):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    return "; ".join(f"{a} imports {b} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle))


def test_no_engine_module_imports_one_that_imports_it_back() -> None:
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, describe(cycle, graph)


def test_the_check_finds_a_circle_through_an_import_inside_a_function(tmp_path: Path) -> None:
    graph = {
        "workflows.a": {"workflows.b": 3},
        "workflows.b": {"workflows.c": 5},
        "workflows.c": {"workflows.a": 40},
    }
    cycle = find_cycle(graph)
    assert cycle is not None
    assert "workflows.c imports workflows.a (line 40)" in describe(cycle, graph)
    # and the reader sees an import wherever it stands, including inside a function
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from .context import WorkflowContext\n")
    known = {"workflows", "workflows.context", "workflows.m"}
    assert list(imported_modules(source, known, "workflows.m")) == [(2, "workflows.context")]
