"""No import cycles among dashboard modules, not even through imports inside functions.

Every module under dashboard/ is parsed with ``ast`` (nothing is imported) and every import
statement counts: at module level, inside functions and methods, in ``try``/``if`` blocks.
Only imports under ``if TYPE_CHECKING:`` are left out, since they never run. An edge goes to
the module an import names (``from dashboard.execution import tasks`` -> the submodule
``dashboard.execution.tasks``; ``from dashboard.selectors import run_list`` -> the package's
``__init__``, whose re-exports are edges of their own). A package's ``__init__`` is not counted
as imported just because one of its submodules is.

A lower layer that needs a higher one publishes an interface (``services.dispatch``) that the
higher layer plugs into from ``DashboardConfig.ready()``; see STYLE.md, "Layout of the Django side".
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "dashboard"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def dashboard_modules() -> dict[str, Path]:
    return {
        module_name(path): path
        for path in sorted((ROOT / PACKAGE).rglob("*.py"))
        if "migrations" not in path.parts
    }


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement except those only a type checker reads."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the dashboard modules it imports (by any import statement it contains)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _absolute(name, is_package, node)
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    # "from package import submodule" imports the submodule itself.
                    targets.append(submodule if submodule in modules else source)
            for target in targets:
                # "import dashboard.a.b" names a module; an unknown dotted tail is an attribute.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    for start in sorted(graph):
        if colour[start] != WHITE:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        colour[start] = GREY
        while stack:
            following = next(stack[-1], None)
            if following is None:
                colour[path.pop()] = BLACK
                stack.pop()
            elif colour[following] == GREY:
                return [*path[path.index(following) :], following]
            elif colour[following] == WHITE:
                colour[following] = GREY
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_the_graph_sees_imports_inside_functions_and_skips_type_checking(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from dashboard import c\n"
        "def f():\n    from dashboard.b import thing\n"
    )
    tree = ast.parse(source)
    names = [getattr(node, "module", None) for node in _imports(tree)]
    assert names == ["typing", "dashboard.b"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_dashboard_modules_import_each_other_without_a_cycle() -> None:
    modules = dashboard_modules()
    assert "dashboard.services.dispatch" in modules and "dashboard.models.runs" in modules
    graph = import_graph(modules)
    cycle = find_cycle(graph)
    if cycle is not None:
        pytest.fail("import cycle among dashboard modules:\n  " + "\n  -> ".join(cycle))


def test_services_never_import_the_layers_that_plug_into_them() -> None:
    """services hand runs and notifications upwards through services.dispatch only."""
    graph = import_graph(dashboard_modules())
    above = ("dashboard.execution.tasks", "dashboard.execution.worker", "dashboard.approvals")
    for module, targets in graph.items():
        if module.startswith("dashboard.services"):
            assert not [t for t in targets if t.startswith(above)], (module, sorted(targets))
