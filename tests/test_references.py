"""Every module, object and file that the code's docstrings, comments and the README name exists.

Prose that names ``dashboard.services.retention`` or ``workflows/storage/chunks.py`` is a promise
to the reader; after a move it silently points nowhere. This reads the text of every module under
``dashboard/`` and ``workflows/`` and of ``README.md`` (nothing is imported) and resolves:

- dotted names in backticks that start with ``dashboard.`` or ``workflows.``, or, in a file of
  one of those packages, with the name of one of its top-level packages (``services.dispatch``
  in dashboard/ means ``dashboard.services.dispatch``): the longest prefix must be a module (a
  ``.py`` file or a package), and the next name, if any, must be defined at the top level of
  that module (a function, class, assignment or import);
- paths that end in ``.py`` under ``dashboard/``, ``workflows/`` or ``tests/``: the file exists.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dashboard", "workflows")
DOTTED = re.compile(r"`+([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(r"(?<![\w/.])((?:dashboard|workflows|tests)/[\w/]+\.py)\b")


def texts() -> list[Path]:
    found = [ROOT / "README.md"]
    for package in PACKAGES:
        found += [path for path in sorted((ROOT / package).rglob("*.py"))]
    return [path for path in found if "migrations" not in path.parts]


def module_file(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def top_level_names(path: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.If | ast.Try):
            # Names bound under TYPE_CHECKING or try/except ImportError count too.
            for child in ast.walk(node):
                if isinstance(child, (ast.ImportFrom, ast.Import)):
                    names.update((a.asname or a.name).split(".")[0] for a in child.names)
                elif isinstance(child, (ast.FunctionDef, ast.ClassDef)):
                    names.add(child.name)
    return frozenset(names)


def unresolved_name(dotted: str) -> str | None:
    """Why ``dotted`` names nothing, or None when it resolves."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is None:
            continue
        if cut == len(parts) or parts[cut] in top_level_names(path):
            return None
        return f"{'.'.join(parts[:cut])} defines no {parts[cut]!r}"
    return "no such module"


@functools.cache
def subpackages(package: str) -> frozenset[str]:
    """The names directly under ``package`` that are packages (folders with an __init__)."""
    return frozenset(p.parent.name for p in (ROOT / package).glob("*/__init__.py"))


def absolute(dotted: str, path: Path) -> str | None:
    """``dotted`` as a full module path, or None when it is not a name of ours.

    A name is looked up as Python would from the file's own package first (``access.page_view``
    in dashboard/web/ is ``dashboard.web.access``), then from the top-level package.
    """
    first = dotted.split(".")[0]
    if first in PACKAGES:
        return dotted
    folders = path.relative_to(ROOT).parent.parts
    if not folders or folders[0] not in PACKAGES:
        return None
    for depth in range(len(folders), 1, -1):
        package = ".".join(folders[:depth])
        if module_file(f"{package}.{first}") is not None:
            return f"{package}.{dotted}"
    if first in subpackages(folders[0]):
        return f"{folders[0]}.{dotted}"
    return None


def broken_references() -> list[str]:
    broken = []
    for path in texts():
        where = path.relative_to(ROOT)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for written in DOTTED.findall(line):
                if written.endswith(".py"):
                    # A bare file name is one beside the text or in a folder above it.
                    folders = [path.parent, *path.parent.parents]
                    folders = folders[: folders.index(ROOT) + 1]
                    if not any((folder / written).is_file() for folder in folders):
                        broken.append(f"{where}:{number}: {written} (no such file here or above)")
                    continue
                dotted = absolute(written, path)
                if dotted is None:
                    continue
                reason = unresolved_name(dotted)
                if reason:
                    broken.append(f"{where}:{number}: {written} ({reason})")
            for named in PATH.findall(line):
                if not (ROOT / named).is_file():
                    broken.append(f"{where}:{number}: {named} (no such file)")
    return broken


def test_named_modules_objects_and_files_exist() -> None:
    broken = broken_references()
    if broken:
        pytest.fail("prose names what is not there:\n  " + "\n  ".join(broken))


def test_a_moved_module_is_caught() -> None:
    assert unresolved_name("workflows.storage.chunks") is None
    assert unresolved_name("workflows.storage.document.join_document") is None
    assert (
        unresolved_name("workflows.storage.no_such_module")
        == "workflows.storage defines no 'no_such_module'"
    )
    assert unresolved_name("dashboard.nowhere.at_all") == "dashboard defines no 'nowhere'"


BULLET = re.compile(r"^\* (``.*?``):", re.MULTILINE)
NAME = re.compile(r"``([\w/.]+?)(?:\.py)?``")


def submodules(package: Path) -> set[str]:
    """The modules and packages directly inside ``package`` (its own __init__ left out)."""
    found = {path.stem for path in package.glob("*.py") if path.name != "__init__.py"}
    found |= {path.parent.name for path in package.glob("*/__init__.py")}
    return found - {"migrations"}


def package_lists() -> list[str]:
    """Package docstrings whose bullet list of modules is not the package's modules."""
    wrong = []
    for package in PACKAGES:
        for init in sorted((ROOT / package).rglob("__init__.py")):
            if "migrations" in init.parts:
                continue
            docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            heads = BULLET.findall(docstring)
            listed = {name.split("/")[0] for head in heads for name in NAME.findall(head)}
            if not listed:
                continue
            present = submodules(init.parent)
            where = init.relative_to(ROOT)
            if listed - present:
                wrong.append(
                    f"{where} lists modules that are not there: {sorted(listed - present)}"
                )
            if present - listed:
                wrong.append(f"{where} leaves out: {sorted(present - listed)}")
    return wrong


def test_a_package_that_lists_its_modules_lists_them_all() -> None:
    """A package docstring either lists no modules, or lists each of them as ``* ``name``:``."""
    wrong = package_lists()
    if wrong:
        pytest.fail("package docstrings out of date:\n  " + "\n  ".join(wrong))
