"""A functional workflow's signature: the code its saved results depend on.

A graph's checkpoints are tied to its topology; a functional workflow's are tied to its code.
Starting from the workflow function, discovery follows the names its code loads (globals, the
values its closure captured, nested functions and lambdas) to every ``@step`` it can reach, in
any module, and to every plain function of the workflow's own module (helpers of other modules
are not followed, as in MAF). The signature lists each step's name and code fingerprint and
each helper's fingerprint; a checkpoint records it (``graph_signature``, with
``"kind": "functional"``) and its hash, and a resume refuses a checkpoint whose hash differs,
naming what changed.
"""

from __future__ import annotations

import dis
import inspect
from collections.abc import Callable, Iterable, Mapping
from types import CodeType
from typing import Any

from .identity import digest, function_digest
from .steps import StepWrapper

__all__ = ["Signature", "describe_changes", "signature_of"]


class Signature:
    """What a functional workflow's code is now: its reachable steps and helper functions."""

    def __init__(self, name: str, func: Callable[..., Any]) -> None:
        steps, helpers = _reachable(func)
        self.steps = steps
        self.document: dict[str, Any] = {
            "kind": "functional",
            "workflow": name,
            "steps": sorted(list(s.signature_entry()) for s in steps),
            "functions": sorted(list(entry) for entry in helpers),
        }
        self.hash = digest(self.document)

    def expected_code(self) -> dict[str, set[str]]:
        """The code fingerprints each step name has now (two wrappers may share a name)."""
        codes: dict[str, set[str]] = {}
        for wrapper in self.steps:
            codes.setdefault(wrapper.name, set()).add(wrapper.expected_code())
        return codes


def signature_of(name: str, func: Callable[..., Any]) -> Signature:
    """The signature of the workflow ``name`` whose function is ``func``."""
    return Signature(name, func)


def describe_changes(stored: Mapping[str, Any], current: Mapping[str, Any]) -> tuple[str, ...]:
    """What differs between a checkpoint's signature and the code's (``step 'x' changed``...),
    empty when the checkpoint recorded none."""
    if stored.get("kind") != "functional":
        return ()
    changes: list[str] = []
    for label, field, width in (("step", "steps", 1), ("function", "functions", 2)):
        before = _by_name(stored.get(field, ()), width)
        after = _by_name(current.get(field, ()), width)
        for name in sorted(set(before) | set(after)):
            if name not in after:
                changes.append(f"{label} {name!r} was removed")
            elif name not in before:
                changes.append(f"{label} {name!r} was added")
            elif before[name] != after[name]:
                changes.append(f"{label} {name!r} changed")
    return tuple(changes)


def _by_name(entries: Iterable[Any], width: int) -> dict[str, list[Any]]:
    """Signature entries grouped by name (a step's name; a helper's module.qualname)."""
    grouped: dict[str, list[Any]] = {}
    for entry in entries:
        if isinstance(entry, list) and len(entry) > width:
            name = ".".join(str(part) for part in entry[:width])
            grouped.setdefault(name, []).append(entry[width:])
    return {name: sorted(items) for name, items in grouped.items()}


# --------------------------------------------------------------------------------- the walk


def _reachable(
    func: Callable[..., Any],
) -> tuple[list[StepWrapper[Any]], set[tuple[str, str, str]]]:
    walk = _Walk(func)
    walk.visit(func, getattr(func, "__module__", None))
    return walk.steps, walk.helpers


class _Walk:
    def __init__(self, root: Callable[..., Any]) -> None:
        self.root = root
        self.steps: list[StepWrapper[Any]] = []
        self.helpers: set[tuple[str, str, str]] = set()
        self._seen: set[int] = set()
        self._codes: set[tuple[int, int, str | None]] = set()

    def visit(self, value: Any, module: str | None, *, helper: bool = True) -> None:
        if inspect.isfunction(value) and value is not self.root and value.__module__ != module:
            return  # a helper of another module: not followed
        if id(value) in self._seen:
            return
        self._seen.add(id(value))
        if isinstance(value, StepWrapper):
            self.steps.append(value)
            inner = value._func
            self.visit_function(inner, getattr(inner, "__module__", None), helper=False)
        elif isinstance(value, (staticmethod, classmethod)) or inspect.ismethod(value):
            self.visit(value.__func__, module)
        elif inspect.isfunction(value):
            self.visit_function(value, module, helper=helper)
        elif isinstance(value, Mapping):
            for item in value.values():
                self.visit(item, module)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                self.visit(item, module)

    def visit_function(self, func: Any, module: str | None, *, helper: bool) -> None:
        if not inspect.isfunction(func):
            return
        if helper:
            self.helpers.add((func.__module__, func.__qualname__, function_digest(func)[0]))
        for cell in func.__closure__ or ():
            try:
                captured = cell.cell_contents
            except ValueError:  # not filled yet
                continue
            self.visit(captured, _module_of(captured, module))
        self.visit_code(func.__code__, func.__globals__, module)

    def visit_code(self, code: CodeType, names: Mapping[str, Any], module: str | None) -> None:
        seen = (id(code), id(names), module)
        if seen in self._codes:
            return
        self._codes.add(seen)
        loaded = {
            op.argval
            for op in dis.get_instructions(code)
            if op.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(op.argval, str)
        }
        for name in sorted(loaded):
            if name in names:
                self.visit(names[name], _module_of(names[name], module))
        for constant in code.co_consts:
            if isinstance(constant, CodeType):  # nested functions, lambdas, comprehensions
                self.visit_code(constant, names, module)


def _module_of(value: Any, default: str | None) -> str | None:
    """The module a reached function belongs to; other values keep the one they came from."""
    return getattr(value, "__module__", default) if inspect.isfunction(value) else default
