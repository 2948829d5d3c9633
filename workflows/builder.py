"""``WorkflowBuilder``: assemble executors and edges, validate, build a ``Workflow``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Self

from .edges import Case, Condition, Default, EdgeGroup, Selection, make_cases
from .exceptions import WorkflowValidationError
from .executor import Executor
from .graph import Graph

if TYPE_CHECKING:
    from .storage.protocol import CheckpointStorage
    from .workflow import Workflow

__all__ = ["WorkflowBuilder"]

DEFAULT_MAX_ITERATIONS = 100


class WorkflowBuilder:
    """Builds a workflow graph fluently.

    Args:
        start_executor: receives the run's input message in superstep 1.
        name: names the workflow's checkpoints; defaults to a stable name derived from the graph
            (same graph, same name, in any process).
        description: shown in the dashboard.
        max_iterations: the most supersteps one lineage may take (counted across resumes).
        checkpoint_storage: where a checkpoint is saved at entry and after every superstep.
    """

    def __init__(
        self,
        *,
        start_executor: Executor,
        name: str | None = None,
        description: str | None = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        checkpoint_storage: CheckpointStorage | None = None,
    ) -> None:
        if not isinstance(max_iterations, int) or max_iterations < 1:
            raise WorkflowValidationError("max_iterations must be a positive integer")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise WorkflowValidationError("a workflow name must be a non-empty string")
        self._executors: dict[str, Executor] = {}
        self._groups: list[EdgeGroup] = []
        self._start = self._add(start_executor)
        self._name = name
        self._description = description
        self._max_iterations = max_iterations
        self._storage = checkpoint_storage

    def _add(self, executor: Executor | str) -> str:
        if isinstance(executor, str):
            if executor not in self._executors:
                raise WorkflowValidationError(f"unknown executor id {executor!r}; pass the executor")
            return executor
        if not isinstance(executor, Executor):
            raise WorkflowValidationError(f"{executor!r} is not an Executor")
        known = self._executors.get(executor.id)
        if known is not None and known is not executor:
            raise WorkflowValidationError(
                f"two different executors share the id {executor.id!r}"
            )
        self._executors[executor.id] = executor
        return executor.id

    def add_edge(
        self, source: Executor | str, target: Executor | str, condition: Condition | None = None
    ) -> Self:
        """Messages from ``source`` go to ``target`` (only those for which ``condition`` holds)."""
        self._groups.append(
            EdgeGroup("single", [self._add(source)], [self._add(target)], condition=condition)
        )
        return self

    def add_fan_out_edges(self, source: Executor | str, targets: Sequence[Executor | str]) -> Self:
        """Every message from ``source`` goes to each of ``targets``, which run concurrently."""
        ids = self._targets(targets, "add_fan_out_edges")
        self._groups.append(EdgeGroup("fan_out", [self._add(source)], ids))
        return self

    def add_multi_selection_edge_group(
        self,
        source: Executor | str,
        targets: Sequence[Executor | str],
        selection_func: Selection,
    ) -> Self:
        """``selection_func(message, target_ids)`` picks which targets get each message."""
        ids = self._targets(targets, "add_multi_selection_edge_group")
        self._groups.append(
            EdgeGroup("fan_out", [self._add(source)], ids, selection=selection_func)
        )
        return self

    def add_switch_case_edge_group(
        self, source: Executor | str, cases: Sequence[Case | Default]
    ) -> Self:
        """The first ``Case`` whose condition holds takes the message; else the ``Default``."""
        defaults = [c for c in cases if isinstance(c, Default)]
        if len(defaults) != 1 or not isinstance(cases[-1], Default):
            raise WorkflowValidationError(
                "a switch-case group needs exactly one Default, as its last entry"
            )
        if len(cases) < 2:
            raise WorkflowValidationError("a switch-case group needs at least one Case")
        if any(not isinstance(c, (Case, Default)) for c in cases):
            raise WorkflowValidationError("switch-case entries must be Case(...) or Default(...)")
        pairs = [(cond, self._add(target)) for cond, target in make_cases(cases)]
        self._groups.append(
            EdgeGroup("switch_case", [self._add(source)], [t for _, t in pairs], cases=pairs)
        )
        return self

    def add_fan_in_edges(self, sources: Sequence[Executor | str], target: Executor | str) -> Self:
        """``target`` receives one list once every source has sent (buffered across supersteps)."""
        ids = self._targets(sources, "add_fan_in_edges")
        self._groups.append(EdgeGroup("fan_in", ids, [self._add(target)]))
        return self

    def add_chain(self, executors: Sequence[Executor | str]) -> Self:
        """``add_edge`` between each consecutive pair."""
        if len(executors) < 2:
            raise WorkflowValidationError("add_chain needs at least two executors")
        for source, target in zip(executors, executors[1:]):
            self.add_edge(source, target)
        return self

    def _targets(self, items: Sequence[Executor | str], method: str) -> list[str]:
        if isinstance(items, (str, Executor)) or len(items) < 2:
            raise WorkflowValidationError(f"{method} needs a list of at least two executors")
        ids = [self._add(item) for item in items]
        if len(set(ids)) != len(ids):
            raise WorkflowValidationError(f"{method} lists an executor twice: {ids}")
        return ids

    def build(self) -> Workflow:
        """Validate the graph and return the workflow.

        Raises:
            WorkflowValidationError: duplicate edges, executors unreachable from the start, or a
                declared output type that no target handles — naming the executors involved.
        """
        from .workflow import Workflow

        graph = Graph(dict(self._executors), self._start, list(self._groups))
        graph.validate()
        graph.register_types()
        name = self._name or f"{self._start}-{graph.signature_hash[:10]}"
        return Workflow(
            graph,
            name=name,
            description=self._description,
            max_iterations=self._max_iterations,
            checkpoint_storage=self._storage,
        )
