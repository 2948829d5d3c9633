"""Edge groups: how a message from one executor reaches others.

Each group answers one question for a message — which of its targets should receive it — and
the runtime (``runtime.py``) applies the type checks and the fan-in barrier around that.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .exceptions import WorkflowRunError

__all__ = [
    "Case",
    "Default",
    "Edge",
    "EdgeGroup",
    "FanInEdgeGroup",
    "FanOutEdgeGroup",
    "INTERNAL_SOURCE_ID",
    "InternalEdgeGroup",
    "SingleEdgeGroup",
    "SwitchCaseEdgeGroup",
    "SwitchCaseEdgeGroupCase",
    "SwitchCaseEdgeGroupDefault",
]

Condition = Callable[[Any], bool | Awaitable[bool]]
Selection = Callable[[Any, list[str]], list[str] | Awaitable[list[str]]]


def callable_name(func: Callable[..., Any] | None) -> str | None:
    if func is None:
        return None
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


def short_name(func: Callable[..., Any] | None) -> str | None:
    """A callable's own name (``is_big``), as MAF reports a condition; the signature keeps the
    qualified name so that two same-named conditions in different places differ."""
    name = callable_name(func)
    return None if name is None else name.rsplit(".", 1)[-1]


async def _call(func: Callable[..., Any], *args: Any) -> Any:
    result = func(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


@dataclass(frozen=True)
class Case:
    """A switch-case branch: messages for which ``condition`` is true go to ``target``."""

    condition: Condition
    target: Any


@dataclass(frozen=True)
class Default:
    """The branch a switch-case group takes when no case matches."""

    target: Any


class SwitchCaseEdgeGroupCase(Case):
    """MAF's spelling of a case naming its target by id: ``(condition, target_id)``."""

    def __init__(
        self, condition: Condition, target_id: str, *, condition_name: str | None = None
    ) -> None:
        super().__init__(condition, target_id)

    @property
    def target_id(self) -> str:
        return str(self.target)


class SwitchCaseEdgeGroupDefault(Default):
    """MAF's spelling of the default branch naming its target by id."""

    def __init__(self, target_id: str) -> None:
        super().__init__(target_id)

    @property
    def target_id(self) -> str:
        return str(self.target)


def INTERNAL_SOURCE_ID(executor_id: str) -> str:  # upper case: Microsoft Agent Framework's name
    """The source id of messages the engine itself hands an executor (input, answers)."""
    return f"internal:{executor_id}"


@dataclass(frozen=True)
class Edge:
    """One ``source -> target`` hand-off inside a group, as a picture of the graph sees it.

    ``id`` is ``"source->target"``: two edges with one id are the same edge, which the builder
    refuses. ``has_condition`` tells whether a condition (or a switch-case predicate other than the
    default) guards it.
    """

    source_id: str
    target_id: str
    condition_name: str | None = None
    has_condition: bool = False

    @property
    def id(self) -> str:
        return f"{self.source_id}->{self.target_id}"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source_id": self.source_id, "target_id": self.target_id}
        if self.condition_name is not None:
            data["condition_name"] = self.condition_name
        return data


# The names Microsoft Agent Framework gives each kind of group, which its users switch on.
_TYPE_NAMES = {
    "single": "SingleEdgeGroup",
    "fan_out": "FanOutEdgeGroup",
    "switch_case": "SwitchCaseEdgeGroup",
    "fan_in": "FanInEdgeGroup",
    "internal": "InternalEdgeGroup",
}


@dataclass
class EdgeGroup:
    """One routing rule from ``sources`` to ``targets``.

    kind is one of ``single`` (one edge, optional condition), ``fan_out`` (every target, or those
    picked by a selection function), ``switch_case`` (the first true case, else the default) and
    ``fan_in`` (every source must have sent before the target gets them all as one list).
    ``internal`` groups only describe, for pictures and ``Workflow.edge_groups``, that the engine
    itself delivers the run's input and request answers to an executor; they never route.

    The builder makes the subclass named after the kind (``SingleEdgeGroup``, ...), so
    ``isinstance`` checks written for Microsoft Agent Framework work on ``Workflow.edge_groups``.
    """

    kind: str
    sources: list[str]
    targets: list[str]
    condition: Condition | None = None
    selection: Selection | None = None
    cases: list[tuple[Condition | None, str]] = field(default_factory=list)

    @property
    def type(self) -> str:
        """The group's kind as a class name (``"FanInEdgeGroup"``, ...)."""
        return _TYPE_NAMES.get(self.kind, self.kind)

    @property
    def id(self) -> str:
        """Stable across builds and processes (unlike a random id), so logs and pictures agree."""
        return f"{self.type}/{self.key}"

    @property
    def edges(self) -> list[Edge]:
        """The group's edges; a switch-case group has one edge per distinct target."""
        if self.kind == "fan_in":
            return [Edge(s, self.targets[0]) for s in self.sources]
        if self.kind == "internal":
            return [Edge(f"internal:{self.targets[0]}", self.targets[0])]
        source = self.sources[0]
        if self.kind == "single":
            name = short_name(self.condition)
            return [Edge(source, self.targets[0], name, self.condition is not None)]
        if self.kind == "switch_case":
            guarded: dict[str, bool] = {}
            for condition, target in self.cases:
                guarded[target] = guarded.get(target, False) or condition is not None
            return [Edge(source, t, None, guarded.get(t, False)) for t in self.targets]
        return [Edge(source, t) for t in self.targets]

    @property
    def source_executor_ids(self) -> list[str]:
        return list(dict.fromkeys(e.source_id for e in self.edges))

    @property
    def target_executor_ids(self) -> list[str]:
        return list(dict.fromkeys(e.target_id for e in self.edges))

    def to_dict(self) -> dict[str, Any]:
        """MAF's keys (``id``, ``type``, ``edges``, and per kind ``selection_func_name`` /
        ``cases``) plus ours (``kind``, ``sources``, ``targets``), all JSON-safe."""
        data: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "edges": [e.to_dict() for e in self.edges],
        }
        if self.kind in ("fan_out", "switch_case"):
            data["selection_func_name"] = short_name(self.selection)
        if self.kind == "switch_case":
            data["cases"] = [
                {"target_id": t, "type": "Default"}
                if c is None
                else {"target_id": t, "type": "Case", "condition_name": short_name(c)}
                for c, t in self.cases
            ]
        data.update(self.signature())
        return data

    @property
    def key(self) -> str:
        """Names the group by its topology, stable across processes (fan-in buffers use it)."""
        if self.kind == "internal":
            return f"internal:{self.targets[0]}"
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


class SingleEdgeGroup(EdgeGroup):
    """``add_edge(source, target, condition)``."""

    def __init__(self, source_id: str, target_id: str, condition: Condition | None = None) -> None:
        super().__init__("single", [source_id], [target_id], condition=condition)


class FanOutEdgeGroup(EdgeGroup):
    """``add_fan_out_edges`` and ``add_multi_selection_edge_group``."""

    def __init__(
        self, source_id: str, target_ids: Sequence[str], selection_func: Selection | None = None
    ) -> None:
        super().__init__("fan_out", [source_id], list(target_ids), selection=selection_func)

    @property
    def selection_func(self) -> Selection | None:
        return self.selection

    @property
    def selection_func_name(self) -> str | None:
        return short_name(self.selection)


class SwitchCaseEdgeGroup(FanOutEdgeGroup):
    """``add_switch_case_edge_group``: ``cases`` are ``(condition, target_id)``, None = default."""

    def __init__(self, source_id: str, cases: Sequence[tuple[Condition | None, str]]) -> None:
        targets = list(dict.fromkeys(t for _, t in cases))  # two cases may share a target
        EdgeGroup.__init__(self, "switch_case", [source_id], targets, cases=list(cases))


class FanInEdgeGroup(EdgeGroup):
    """``add_fan_in_edges(sources, target)``."""

    def __init__(self, source_ids: Sequence[str], target_id: str) -> None:
        super().__init__("fan_in", list(source_ids), [target_id])


class InternalEdgeGroup(EdgeGroup):
    """The engine's own delivery to ``executor_id`` (run input, request answers); describes only."""

    def __init__(self, executor_id: str) -> None:
        super().__init__("internal", [], [executor_id])


def make_cases(cases: Sequence[Case | Default]) -> list[tuple[Condition | None, Any]]:
    return [(c.condition if isinstance(c, Case) else None, c.target) for c in cases]
