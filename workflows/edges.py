"""Edge groups: how a message from one executor reaches others.

Each group answers one question for a message — which of its targets should receive it — and
the router (``routing.py``) applies the type checks and the fan-in barrier around that.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .exceptions import WorkflowRunError

__all__ = ["Case", "Default", "EdgeGroup"]

Condition = Callable[[Any], bool | Awaitable[bool]]
Selection = Callable[[Any, list[str]], list[str] | Awaitable[list[str]]]


def callable_name(func: Callable[..., Any] | None) -> str | None:
    if func is None:
        return None
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


async def _call(func: Callable[..., Any], *args: Any) -> Any:
    result = func(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


@dataclass(frozen=True)
class Case:
    """A branch of a switch-case group: messages for which ``condition`` is true go to ``target``."""

    condition: Condition
    target: Any


@dataclass(frozen=True)
class Default:
    """The branch a switch-case group takes when no case matches."""

    target: Any


@dataclass
class EdgeGroup:
    """One routing rule from ``sources`` to ``targets``.

    kind is one of ``single`` (one edge, optional condition), ``fan_out`` (every target, or those
    picked by a selection function), ``switch_case`` (the first true case, else the default) and
    ``fan_in`` (every source must have sent before the target gets them all as one list).
    """

    kind: str
    sources: list[str]
    targets: list[str]
    condition: Condition | None = None
    selection: Selection | None = None
    cases: list[tuple[Condition | None, str]] = field(default_factory=list)

    @property
    def key(self) -> str:
        """Names the group by its topology, stable across processes (fan-in buffers use it)."""
        return f"{self.kind}:{','.join(self.sources)}->{','.join(self.targets)}"

    def signature(self) -> dict[str, Any]:
        sig: dict[str, Any] = {
            "kind": self.kind,
            "sources": list(self.sources),
            "targets": list(self.targets),
        }
        if self.condition is not None:
            sig["condition"] = callable_name(self.condition)
        if self.selection is not None:
            sig["selection"] = callable_name(self.selection)
        if self.cases:
            sig["cases"] = [[callable_name(c) if c else "default", t] for c, t in self.cases]
        return sig

    async def select(self, data: Any) -> list[str]:
        """The targets this message should go to, before type checks."""
        if self.kind == "single":
            if self.condition is not None and not await _call(self.condition, data):
                return []
            return self.targets
        if self.kind == "fan_out":
            if self.selection is None:
                return self.targets
            chosen = await _call(self.selection, data, list(self.targets))
            unknown = [t for t in chosen if t not in self.targets]
            if unknown:
                raise WorkflowRunError(
                    f"selection function {callable_name(self.selection)} chose {unknown}, which "
                    f"are not targets of this group ({self.targets})"
                )
            return list(dict.fromkeys(chosen))  # de-duplicated, order kept
        if self.kind == "switch_case":
            for condition, target in self.cases:
                if condition is None or await _call(condition, data):
                    return [target]
            return []
        return self.targets  # fan_in: the barrier is the router's job


def make_cases(cases: Sequence[Case | Default]) -> list[tuple[Condition | None, Any]]:
    return [(c.condition if isinstance(c, Case) else None, c.target) for c in cases]
