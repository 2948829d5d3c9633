"""Imports among dashboard packages only run down the layers, and no module cycle exists.

Every module under dashboard/ is parsed with ``ast`` (nothing is imported) and every import
statement counts: at module level, inside functions and methods, in ``try``/``if`` blocks.
Only imports under ``if TYPE_CHECKING:`` are left out, since they never run. An edge goes to
the module an import names (``from dashboard.execution import tasks`` -> the submodule
``dashboard.execution.tasks``; ``from dashboard.selectors import run_list`` -> the package's
``__init__``, whose re-exports are edges of their own). A package's ``__init__`` is not counted
as imported just because one of its submodules is.

``LAYERS`` is the architecture in one place: a package may import from packages in lower layers
only, never from its own layer or above. A lower layer that needs a higher one publishes an
interface (``services.dispatch``) that the higher layer plugs into from
``DashboardConfig.ready()``; see STYLE.md, "Layout of the Django side".
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "dashboard"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def dashboard_modules(root: Path = ROOT) -> dict[str, Path]:
    return {
        module_name(path, root): path
        for path in sorted((root / PACKAGE).rglob("*.py"))
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


@dataclass(frozen=True)
class Edge:
    """One import statement from one dashboard module to another."""

    source: str
    target: str
    path: str  # relative to the checkout
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} imports {self.target}"


def import_edges(modules: dict[str, Path], root: Path = ROOT) -> list[Edge]:
    """Every import from one dashboard module to another, with where it is written."""
    edges: list[Edge] = []
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
                    where = path.relative_to(root).as_posix()
                    edges.append(Edge(name, target, where, node.lineno))
    return edges


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the dashboard modules it imports (by any import statement it contains)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for edge in import_edges(modules):
        graph[edge.source].add(edge.target)
    return graph


# Lowest first. A name is a package (or a top-level module) directly under dashboard/;
# "dashboard" is the package's own __init__.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"core", "catalog", "instruments", "models", "outbound", "renderers"}),
    frozenset({"access", "checkpoints", "broadcast"}),
    frozenset({"services", "selectors"}),
    frozenset({"execution", "observability"}),
    frozenset({"notifications", "demo"}),
    frozenset({"api", "web", "admin", "management"}),
    frozenset({"config"}),
    frozenset({"apps", "dashboard"}),
)


def package_of(module: str) -> str:
    """The top-level dashboard package (or module) that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(package: str) -> int:
    for level, packages in enumerate(LAYERS):
        if package in packages:
            return level
    raise LookupError(f"dashboard package {package!r} is in no layer; add it to LAYERS")


def upward_imports(edges: list[Edge]) -> list[str]:
    """Every import from a package to one in its own layer or above, as a readable line."""
    found = []
    for edge in edges:
        source, target = package_of(edge.source), package_of(edge.target)
        if source == target:
            continue
        if layer_of(target) >= layer_of(source):
            found.append(
                f"{edge}  ({target}, layer {layer_of(target)}, is not below "
                f"{source}, layer {layer_of(source)})"
            )
    return found


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


def test_every_dashboard_package_sits_in_a_layer() -> None:
    packages = {package_of(name) for name in dashboard_modules()}
    placed = set().union(*LAYERS)
    assert packages - placed == set(), "add these packages to LAYERS"
    assert placed - packages <= {"renderers"}, "LAYERS names packages that do not exist"


def test_dashboard_imports_only_run_down_the_layers() -> None:
    offenders = upward_imports(import_edges(dashboard_modules()))
    if offenders:
        pytest.fail("imports that run up or across the layers:\n  " + "\n  ".join(offenders))


def test_a_planted_upward_import_is_named_with_its_file_and_line(tmp_path: Path) -> None:
    for folder in ("dashboard", "dashboard/services", "dashboard/web"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "dashboard/web/forms.py").write_text("from dashboard.services import planted\n")
    (tmp_path / "dashboard/services/planted.py").write_text(
        "import os\n\n\ndef later():\n    from dashboard.web import forms\n"
    )
    edges = import_edges(dashboard_modules(tmp_path), tmp_path)
    expected = (
        "dashboard/services/planted.py:5: dashboard.services.planted imports "
        "dashboard.web.forms  (web, layer 5, is not below services, layer 2)"
    )
    assert upward_imports(edges) == [expected]
