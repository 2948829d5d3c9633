"""What a built workflow says about itself: its executors, edges, output designation and a
JSON description, under the names Microsoft Agent Framework's ``Workflow`` uses.

``Workflow`` inherits ``WorkflowIntrospection``; everything here only reads the built graph.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from .events import describe_type

if TYPE_CHECKING:
    from .edges import EdgeGroup
    from .executor import Executor
    from .graph import Graph

__all__ = ["WorkflowIntrospection"]


class WorkflowIntrospection:
    """Read-only views of a workflow's graph (mixed into ``Workflow``)."""

    _graph: Graph
    name: str
    description: str | None
    max_iterations: int

    @property
    def id(self) -> str:
        """Names this workflow *object* (a fresh one per build, for logs and tracing); the
        stable name of the graph, the one checkpoints record, is ``name``."""
        cached: str | None = self.__dict__.get("_instance_id")
        if cached is None:
            cached = str(uuid.uuid4())
            self.__dict__["_instance_id"] = cached
        return cached

    @property
    def start_executor_id(self) -> str:
        return self._graph.start_id

    def get_start_executor(self) -> Executor:
        return self._graph.executors[self._graph.start_id]

    def get_executors_list(self) -> list[Executor]:
        return list(self._graph.executors.values())

    @property
    def edge_groups(self) -> list[EdgeGroup]:
        """Every edge group, the engine's own ``InternalEdgeGroup`` per executor included (as in
        MAF); each has ``id``, ``type``, ``edges`` (``source_id``/``target_id``) and
        ``to_dict()``."""
        return self._graph.described_groups

    @property
    def output_types(self) -> list[Any]:
        """Every type some executor declares it may yield as workflow output."""
        out: list[Any] = []
        for executor in self._graph.executors.values():
            out.extend(t for t in executor.workflow_output_types if t not in out)
        return out

    # ------------------------------------------------------------------------ output designation

    def get_output_executors(self) -> list[Executor]:
        """The executors whose yields are outputs: every executor when nothing is designated."""
        designated = self._graph.output_executor_ids
        executors = self._graph.executors
        if designated is None:
            return list(executors.values())
        return [ex for eid, ex in executors.items() if eid in designated]

    def get_intermediate_executors(self) -> list[Executor]:
        designated = self._graph.intermediate_executor_ids
        return [ex for eid, ex in self._graph.executors.items() if eid in designated]

    def is_terminal_executor(self, executor_id: str) -> bool:
        """Are this executor's yields ``output`` events?"""
        return self._graph.classify_yield(executor_id) == "output"

    def is_intermediate_executor(self, executor_id: str) -> bool:
        """Are this executor's yields ``intermediate`` events?"""
        return self._graph.classify_yield(executor_id) == "intermediate"

    # ------------------------------------------------------------------------------ description

    def to_dict(self) -> dict[str, Any]:
        """The topology as JSON-safe data.

        MAF's keys (``name``, ``id``, ``start_executor_id``, ``max_iterations``, ``edge_groups``,
        ``executors`` keyed by id, ``output_executors``, ``intermediate_executors``, and
        ``description`` when there is one) plus ours: ``start``, ``signature_hash``, the types of
        each executor, and ``kind``/``sources``/``targets`` on each edge group.
        """
        graph = self._graph
        outputs = graph.output_executor_ids
        data: dict[str, Any] = {
            "name": self.name,
            "id": self.id,
            "start_executor_id": graph.start_id,
            "max_iterations": self.max_iterations,
            "edge_groups": [group.to_dict() for group in graph.described_groups],
            "executors": {eid: _executor_dict(ex) for eid, ex in graph.executors.items()},
            "output_executors": sorted(outputs) if outputs is not None else None,
            "intermediate_executors": (
                sorted(graph.intermediate_executor_ids) if outputs is not None else None
            ),
            "start": graph.start_id,
            "signature_hash": graph.signature_hash,
        }
        if self.description is not None:
            data["description"] = self.description
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def _executor_dict(executor: Executor) -> dict[str, Any]:
    own = getattr(executor, "to_dict", None)
    data: dict[str, Any] = dict(own()) if callable(own) else {}
    data.setdefault("id", executor.id)
    data.setdefault("type", executor.type)
    sent = getattr(executor, "declared_output_types", executor.output_types) or []
    data.setdefault("input_types", [describe_type(t) for t in executor.input_types])
    data.setdefault("output_types", [describe_type(t) for t in sent])
    data.setdefault(
        "workflow_output_types", [describe_type(t) for t in executor.workflow_output_types]
    )
    inner = getattr(executor, "workflow", None)
    if "workflow" not in data and isinstance(inner, WorkflowIntrospection):
        data["workflow"] = inner.to_dict()  # a sub-workflow's own graph
    return data
