"""``WorkflowBuilder``: assemble executors and edges, validate, build a ``Workflow``."""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

from .edges import (
    Case,
    Condition,
    Default,
    EdgeGroup,
    FanInEdgeGroup,
    FanOutEdgeGroup,
    Selection,
    SingleEdgeGroup,
    SwitchCaseEdgeGroup,
    make_cases,
)
from .exceptions import ExecutorDuplicationError, OutputDesignationError, WorkflowValidationError
from .executor import Executor
from .graph import Graph
from .validation import validate_graph

if TYPE_CHECKING:
    from .storage.protocol import CheckpointStorage
    from .workflow import Workflow

__all__ = ["WorkflowBuilder"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_ITERATIONS = 100

OutputSelection = Sequence[Executor | str] | Literal["all"] | None
IntermediateSelection = Sequence[Executor | str] | Literal["all", "all_other"] | None


class _Missing:
    """Tells "not passed" from an explicit None (which MAF treats as "no designation")."""

    def __repr__(self) -> str:
        return "<not passed>"


_MISSING: Any = _Missing()


class WorkflowBuilder:
    """Builds a workflow graph fluently.

    Args:
        max_iterations: the most supersteps one lineage may take (counted across resumes).
        name: names the workflow's checkpoints; defaults to a stable name derived from the graph
            (same graph, same name, in any process).
        description: shown in the dashboard.
        start_executor: receives the run's input message in superstep 1.
        checkpoint_storage: where a checkpoint is saved at entry and after every superstep.
        output_from: which executors' ``yield_output`` calls are the workflow's outputs: a list
            of executors (or their ids), or ``"all"`` for every executor that declares workflow
            output types.
        intermediate_output_from: which executors' yields are intermediate outputs
            (``"intermediate"`` events): a list, ``"all"``, or ``"all_other"`` (every executor
            declaring workflow output that ``output_from`` does not list).
        output_executors: the old name of ``output_from`` (logs a deprecation warning).

    Without either designation every yield is an output. With one, yields of executors listed
    in neither are hidden from the caller.
    """

    def __init__(
        self,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        name: str | None = None,
        description: str | None = None,
        *,
        start_executor: Executor,
        checkpoint_storage: CheckpointStorage | None = None,
        output_from: OutputSelection = _MISSING,
        intermediate_output_from: IntermediateSelection = _MISSING,
        output_executors: Sequence[Executor | str] | None = _MISSING,
    ) -> None:
        if (
            isinstance(max_iterations, bool)
            or not isinstance(max_iterations, int)
            or max_iterations < 1
        ):
            raise WorkflowValidationError("max_iterations must be a positive integer")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise WorkflowValidationError("a workflow name must be a non-empty string")
        if output_executors is not _MISSING:
            if output_from is not _MISSING:
                raise TypeError("pass output_from only: output_executors is its deprecated name")
            logger.warning("WorkflowBuilder(output_executors=...) is deprecated; use output_from=")
            output_from = output_executors
        self._output_from = _selection(output_from, ("all",), "output_from")
        self._intermediate_from = _selection(
            intermediate_output_from, ("all", "all_other"), "intermediate_output_from"
        )
        self._executors: dict[str, Executor] = {}
        # id() of each agent passed in -> its AgentExecutor; the agents are kept alive by the
        # wrappers, so an id is never reused while the builder lives.
        self._agent_wrappers: dict[int, Executor] = {}
        self._groups: list[EdgeGroup] = []
        self._start = self._add(start_executor)
        self._name = name
        self._description = description
        self._max_iterations = max_iterations
        self._storage = checkpoint_storage

    def _add(self, executor: Executor | str | Any) -> str:
        if isinstance(executor, str):
            if executor not in self._executors:
                raise WorkflowValidationError(
                    f"unknown executor id {executor!r}; pass the executor"
                )
            return executor
        if not isinstance(executor, Executor):
            executor = self._wrap_agent(executor)
        known = self._executors.get(executor.id)
        if known is not None and known is not executor:
            raise ExecutorDuplicationError(executor.id)
        self._executors[executor.id] = executor
        return executor.id

    def _wrap_agent(self, candidate: Any) -> Executor:
        """An agent's ``AgentExecutor``, the same one each time the same agent is passed (as
        in MAF, one executor per agent instance, its id the agent's name or id).

        Raises:
            WorkflowValidationError: ``candidate`` is neither an executor nor an agent.
            ExecutorDuplicationError: another executor already has the agent's id.
        """
        wrapper = self._agent_wrappers.get(id(candidate))
        if wrapper is not None:
            return wrapper
        if not _is_agent(candidate):
            raise WorkflowValidationError(
                f"{candidate!r} is not an Executor or an agent (SupportsAgentRun)"
            )
        from .agents.executor import AgentExecutor, resolve_agent_id

        executor_id = resolve_agent_id(candidate)
        if executor_id in self._executors:
            raise ExecutorDuplicationError(
                executor_id,
                f"Duplicate executor ID {executor_id!r} from agent. Agent IDs or names must be "
                "unique within a workflow.",
            )
        wrapper = AgentExecutor(candidate, id=executor_id)
        self._agent_wrappers[id(candidate)] = wrapper
        return wrapper

    def add_edge(
        self, source: Executor | str, target: Executor | str, condition: Condition | None = None
    ) -> Self:
        """Messages from ``source`` go to ``target`` (only those for which ``condition`` holds)."""
        self._groups.append(SingleEdgeGroup(self._add(source), self._add(target), condition))
        return self

    def add_fan_out_edges(self, source: Executor | str, targets: Sequence[Executor | str]) -> Self:
        """Every message from ``source`` goes to each of ``targets``, which run concurrently."""
        source_id = self._add(source)
        self._groups.append(FanOutEdgeGroup(source_id, self._targets(targets, "add_fan_out_edges")))
        return self

    def add_multi_selection_edge_group(
        self,
        source: Executor | str,
        targets: Sequence[Executor | str],
        selection_func: Selection,
    ) -> Self:
        """``selection_func(message, target_ids)`` picks which targets get each message."""
        source_id = self._add(source)
        ids = self._targets(targets, "add_multi_selection_edge_group")
        self._groups.append(FanOutEdgeGroup(source_id, ids, selection_func))
        return self

    def add_switch_case_edge_group(
        self, source: Executor | str, cases: Sequence[Case | Default]
    ) -> Self:
        """The first ``Case`` whose condition holds takes the message; else the ``Default``.

        Cases are tried in order, so a ``Default`` that is not last shadows the cases after it
        (allowed, with a logged warning).
        """
        if any(not isinstance(c, (Case, Default)) for c in cases):
            raise WorkflowValidationError("switch-case entries must be Case(...) or Default(...)")
        if len(cases) < 2:
            raise WorkflowValidationError(
                "a switch-case group needs at least one Case and a Default"
            )
        if sum(isinstance(c, Default) for c in cases) != 1:
            raise WorkflowValidationError("a switch-case group needs exactly one Default")
        source_id = self._add(source)
        if not isinstance(cases[-1], Default):
            logger.warning(
                "the Default of %r's switch-case group is not its last entry: the cases after it "
                "are never tried",
                source_id,
            )
        pairs = [(cond, self._add(target)) for cond, target in make_cases(cases)]
        self._groups.append(SwitchCaseEdgeGroup(source_id, pairs))
        return self

    def add_fan_in_edges(self, sources: Sequence[Executor | str], target: Executor | str) -> Self:
        """``target`` receives one list once every source has sent (buffered across supersteps)."""
        ids = self._targets(sources, "add_fan_in_edges")
        self._groups.append(FanInEdgeGroup(ids, self._add(target)))
        return self

    def add_chain(self, executors: Sequence[Executor | str]) -> Self:
        """``add_edge`` between each consecutive pair."""
        if len(executors) < 2:
            raise WorkflowValidationError("add_chain needs at least two executors")
        for source, target in itertools.pairwise(executors):
            self.add_edge(source, target)
        return self

    def _targets(self, items: Sequence[Executor | str], method: str) -> list[str]:
        if isinstance(items, (str, Executor)) or len(items) < 2:
            raise WorkflowValidationError(f"{method} needs a list of at least two executors")
        # An executor listed twice is a duplicate edge, refused by build() like any other.
        return [self._add(item) for item in items]

    def build(self) -> Workflow:
        """Validate the graph and return the workflow.

        Raises:
            WorkflowValidationError: one of its subclasses, naming the executors involved:
                ``EdgeDuplicationError``, ``TypeCompatibilityError`` (no type a source sends is
                taken by a target), ``GraphConnectivityError`` (executors unreachable from the
                start) or ``OutputDesignationError``. What only looks odd is logged instead
                (see ``workflows.validation``).
        """
        from .workflow import Workflow

        outputs, intermediates = self._designation()
        graph = Graph(
            dict(self._executors),
            self._start,
            list(self._groups),
            output_executor_ids=outputs,
            intermediate_executor_ids=intermediates,
        )
        validate_graph(graph)
        graph.register_types()
        name = self._name or f"{self._start}-{graph.signature_hash[:10]}"
        return Workflow(
            graph,
            name=name,
            description=self._description,
            max_iterations=self._max_iterations,
            checkpoint_storage=self._storage,
        )

    def _designation(self) -> tuple[frozenset[str] | None, frozenset[str]]:
        """(output ids or None for "no designation", intermediate ids), with MAF's rules."""
        if self._output_from is None and self._intermediate_from is None:
            return None, frozenset()
        outputs = self._resolve(self._output_from) or []
        if self._intermediate_from == "all_other":
            intermediates = [
                eid
                for eid, ex in self._executors.items()
                if ex.workflow_output_types and eid not in outputs
            ]
        else:
            intermediates = self._resolve(self._intermediate_from) or []
        if not outputs and not intermediates:
            raise OutputDesignationError(
                "output_from / intermediate_output_from select no executor; select at least one "
                "(or pass neither, to make every yield an output)"
            )
        for kind, ids in (("output", outputs), ("intermediate", intermediates)):
            twice = sorted({eid for eid in ids if ids.count(eid) > 1})
            if twice:
                raise OutputDesignationError(f"{kind} executor(s) {twice} listed twice", twice)
        both = sorted(set(outputs) & set(intermediates))
        if both:
            raise OutputDesignationError(
                f"executor(s) {both} cannot be both output and intermediate", both
            )
        return frozenset(outputs), frozenset(intermediates)

    def _resolve(self, selection: Sequence[Executor | str] | str | None) -> list[str] | None:
        if selection is None:
            return None
        if selection == "all":
            return [eid for eid, ex in self._executors.items() if ex.workflow_output_types]
        ids: list[str] = []
        for item in selection:
            if isinstance(item, Executor):
                ids.append(item.id)
            elif isinstance(item, str):
                ids.append(item)
            elif id(item) in self._agent_wrappers:
                ids.append(self._agent_wrappers[id(item)].id)
            elif _is_agent(item):
                from .agents.executor import resolve_agent_id

                ids.append(resolve_agent_id(item))
            else:
                raise OutputDesignationError(
                    f"designations list executors or executor ids, not {type(item).__name__}"
                )
        return ids


def _is_agent(candidate: Any) -> bool:
    """Whether ``candidate`` has MAF's agent shape. Nothing can be one unless MAF is loaded, so
    a workflow without agents never imports it."""
    if "agent_framework" not in sys.modules:
        return False
    from agent_framework import SupportsAgentRun

    return isinstance(candidate, SupportsAgentRun)


def _selection(value: Any, literals: tuple[str, ...], param: str) -> Any:
    """None for "not designated"; a literal as is; a sequence as a list."""
    if value is _MISSING or value is None:
        return None
    if isinstance(value, str):
        if value in literals:
            return value
        allowed = " or ".join(repr(v) for v in literals)
        raise OutputDesignationError(
            f"{param}={value!r} is not understood; pass {allowed} or a list of executors"
        )
    if isinstance(value, Executor):
        raise OutputDesignationError(f"{param} takes a list of executors, not one executor")
    return list(value)
