"""Build-time checks of a workflow graph.

What cannot work is refused with a typed ``WorkflowValidationError`` naming the executors at
fault; what only looks odd is logged, never refused, because Microsoft Agent Framework builds such
graphs and users port them unchanged:

- refused: the start executor missing, a duplicate edge, an edge whose source sends nothing its
  target takes, an executor the start cannot reach, an output designation naming an executor
  that is not in the graph or declares no workflow output;
- logged as warnings: an edge whose source or target declares no types (not checked), a
  self-loop, an executor that declares messages it sends but has no outgoing edge;
- logged at info: executors with no outgoing edges at all (the graph's ends).

Type compatibility asks for *some* overlap per edge: an executor declared to send ``str | int``
may feed a target that takes only ``int`` (the ``str`` messages are dropped at run time with a
warning event).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .exceptions import (
    EdgeDuplicationError,
    GraphConnectivityError,
    OutputDesignationError,
    TypeCompatibilityError,
)
from .graph import Graph
from .typecheck import is_compatible

if TYPE_CHECKING:
    from .edges import EdgeGroup
    from .executor import Executor

__all__ = ["declared_output_types", "validate_designation", "validate_graph"]

logger = logging.getLogger(__name__)


def declared_output_types(executor: Executor) -> list[Any] | None:
    """The message types an executor declares it sends; None (or empty) when it declares none."""
    declared: list[Any] | None = getattr(executor, "declared_output_types", executor.output_types)
    return declared


def validate_graph(graph: Graph) -> None:
    """Every check, in the order MAF runs them, so the first error a user sees is the same."""
    if graph.start_id not in graph.executors:
        raise GraphConnectivityError(
            f"the start executor {graph.start_id!r} is not part of the workflow graph",
            [graph.start_id],
        )
    _check_duplicate_edges(graph)
    _check_types(graph)
    _check_reachable(graph)
    _log_self_loops(graph)
    _log_dead_ends(graph)
    validate_designation(graph)


def _check_duplicate_edges(graph: Graph) -> None:
    seen: set[str] = set()
    for group in graph.groups:
        for edge in group.edges:
            if edge.id in seen:
                raise EdgeDuplicationError(edge.id)
            seen.add(edge.id)


def _check_types(graph: Graph) -> None:
    untyped: set[tuple[str, str]] = set()  # warn once per executor and side, not per edge
    for group in graph.groups:
        for edge in group.edges:
            source = graph.executors[edge.source_id]
            target = graph.executors[edge.target_id]
            sent = declared_output_types(source) or []
            taken = target.input_types
            if not sent or not taken:
                if not sent and (source.id, "sends") not in untyped:
                    untyped.add((source.id, "sends"))
                    _log_untyped(source.id, "sends")
                if not taken and (target.id, "takes") not in untyped:
                    untyped.add((target.id, "takes"))
                    _log_untyped(target.id, "takes")
                continue
            if not any(_accepts(group, s, t) for s in sent for t in taken):
                raise TypeCompatibilityError(source.id, target.id, list(sent), list(taken))


def _log_untyped(executor_id: str, what: str) -> None:
    logger.warning(
        "executor %r declares no types it %s, so the types on its edges are not checked; "
        "annotate WorkflowContext[T] (or pass output=/input=) to have them checked",
        executor_id,
        what,
    )


def _accepts(group: EdgeGroup, sent: Any, taken: Any) -> bool:
    # A fan-in target receives one list of everything its sources sent.
    return is_compatible(list[sent] if group.kind == "fan_in" else sent, taken)


def _check_reachable(graph: Graph) -> None:
    reached = {graph.start_id}
    frontier = [graph.start_id]
    while frontier:
        for group in graph.outgoing.get(frontier.pop(), []):
            for target in group.targets:
                if target not in reached:
                    reached.add(target)
                    frontier.append(target)
    unreachable = sorted(eid for eid in graph.executors if eid not in reached)
    if unreachable:
        raise GraphConnectivityError(
            f"executor(s) {unreachable} cannot be reached from the start executor "
            f"{graph.start_id!r}; connect them or remove them",
            unreachable,
        )


def _log_self_loops(graph: Graph) -> None:
    for group in graph.groups:
        for edge in group.edges:
            if edge.source_id == edge.target_id:
                logger.warning(
                    "executor %r sends to itself: without a condition or a stop the loop runs "
                    "until max_iterations",
                    edge.source_id,
                )


def _log_dead_ends(graph: Graph) -> None:
    ends = sorted(eid for eid in graph.executors if not graph.outgoing.get(eid))
    if not ends:
        return
    logger.info("executors with no outgoing edges (the graph's ends): %s", ends)
    for eid in ends:
        executor = graph.executors[eid]
        # ``Any``/``object`` says "whatever", not a promise to send; and a sub-workflow that
        # yields its child's outputs directly sends nothing on its edges.
        sent = [t for t in declared_output_types(executor) or () if t not in (Any, object)]
        if sent and not (
            getattr(executor, "allow_direct_output", False) or executor.ends_chains_quietly
        ):
            logger.warning(
                "executor %r declares it sends %s but has no outgoing edges: such messages are "
                "dropped at run time with a warning event",
                eid,
                ", ".join(getattr(t, "__name__", None) or repr(t) for t in sent),
            )


def validate_designation(graph: Graph) -> None:
    """Designated output / intermediate executors are in the graph and declare workflow output."""
    outputs = graph.output_executor_ids
    if outputs is None:
        return
    overlap = sorted(outputs & graph.intermediate_executor_ids)
    if overlap:
        raise OutputDesignationError(
            f"executor(s) {overlap} cannot be both output and intermediate", overlap
        )
    for kind, ids in (("output", outputs), ("intermediate", graph.intermediate_executor_ids)):
        for eid in sorted(ids):
            executor = graph.executors.get(eid)
            if executor is None:
                raise OutputDesignationError(
                    f"{kind} executor {eid!r} is not part of the workflow graph", [eid]
                )
            if not executor.workflow_output_types:
                raise OutputDesignationError(
                    f"{kind} executor {eid!r} declares no workflow output type; annotate its "
                    "handler's context WorkflowContext[T, OutputT] (or pass workflow_output=)",
                    [eid],
                )


def validate_workflow_graph(
    edge_groups: Sequence[EdgeGroup],
    executors: dict[str, Executor],
    start_executor: Executor | str,
    output_executors: Sequence[str] | None = None,
    intermediate_executors: Sequence[str] | None = None,
) -> None:
    """MAF's stand-alone check of a graph before it is built: raises what ``build()`` would.

    ``output_executors`` of None (or empty) means no designation, as in the builder.
    """

    start_id = start_executor if isinstance(start_executor, str) else start_executor.id
    graph = Graph(
        dict(executors),
        start_id,
        list(edge_groups),
        output_executor_ids=frozenset(output_executors) if output_executors else None,
        intermediate_executor_ids=frozenset(intermediate_executors or ()),
    )
    validate_graph(graph)
