"""Which state each executor of a run is in, for the coloured workflow graph.

The state comes from the run's events, folded in order (``fold_states``): invoked → running,
completed → done, failed → failed, a request for a human → waiting (and still waiting after
the handler returns, until the executor runs again with the answer). A resume starts the
picture afresh; a retry clears failures.

A worker records an attempt's engine events when it commits the superstep's checkpoint, so
while a superstep runs its "invoked" events are not in the database yet. What runs *now* is
known anyway: the executors the latest checkpoint's in-flight messages are addressed to
(``next_executors``), which is what the page shows as running while the run is running, and
as cancelled once the run was cancelled (a cancel discards the superstep under way: those
executors did not finish it, whatever they did in earlier ones); so is one that was waiting
for a person when the run was cancelled.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from dashboard import catalog, selectors
from dashboard.checkpoints import documents
from dashboard.models import RunStatus, WorkflowRun
from dashboard.renderers.graph_layout import GraphLayout, GraphView
from dashboard.renderers.workflow_graph import layout_of

__all__ = [
    "fold_states",
    "next_executors",
    "run_graph",
    "run_states",
    "workflow_layout",
]

EventRow = tuple[str, Any, Any, Any]  # (type, executor_id, status, action)


def fold_states(events: Iterable[EventRow]) -> dict[str, str]:
    """Executor id → idle/running/done/failed/waiting after these events, oldest first."""
    states: dict[str, str] = {}
    awaiting: set[str] = set()
    for kind, executor, status, action in events:
        if kind == "run_status":
            _status_change(states, awaiting, status, action)
            continue
        if not executor:
            continue
        name = str(executor)
        if kind == "executor_invoked":
            states[name] = "running"
            awaiting.discard(name)
        elif kind == "request_info":
            states[name] = "waiting"
            awaiting.add(name)
        elif kind == "executor_completed":
            states[name] = "waiting" if name in awaiting else "done"
        elif kind == "executor_failed":
            states[name] = "failed"
            awaiting.discard(name)
    return states


def _status_change(states: dict[str, str], awaiting: set[str], status: Any, action: Any) -> None:
    if action == "resume":
        states.clear()
        awaiting.clear()
    elif action == "retry":
        for name, state in list(states.items()):
            if state in ("failed", "running"):
                states[name] = "idle"
    elif status == RunStatus.CANCELLED:
        for name, state in list(states.items()):
            if state == "running":
                states[name] = "idle"
    elif status == RunStatus.FAILED:
        for name, state in list(states.items()):
            if state == "running":
                states[name] = "failed"


@functools.lru_cache(maxsize=64)
def _layout(
    workflow_name: str, signature_hash: str
) -> tuple[GraphLayout, tuple[tuple[str, str], ...]]:
    # Sub-workflow nodes, and output / intermediate executors, are marked in the layout.
    return layout_of(catalog.describe(workflow_name).to_dict())


def workflow_layout(workflow_name: str) -> tuple[GraphLayout, tuple[tuple[str, str], ...]] | None:
    """The deployed workflow's layout and edges (cached per graph version), or None when the
    workflow is no longer registered or is a functional one."""
    try:
        workflow = catalog.describe(workflow_name)
    except catalog.UnknownWorkflowError:
        return None
    if catalog.is_functional(workflow_name):
        return None  # a list of step calls, not a graph (see run_page.steps)
    return _layout(workflow_name, workflow.graph_signature_hash)


def next_executors(document: Mapping[str, Any], edges: Iterable[tuple[str, str]]) -> list[str]:
    """Executors the checkpoint's in-flight messages go to: the ones the next superstep runs.
    A message without a target goes along its source's edges (a fan-out reaches them all)."""
    successors: dict[str, list[str]] = {}
    for source, target in edges:
        successors.setdefault(source, []).append(target)
    found: list[str] = []
    for message in document.get("messages") or []:
        if not isinstance(message, dict):
            continue
        to = message.get("target")
        request = message.get("request")
        if to:
            found.append(str(to))
        elif message.get("kind") == "response" and isinstance(request, dict):
            found.append(str(request.get("source_executor_id") or ""))
        else:
            found.extend(successors.get(str(message.get("source") or ""), []))
    return [name for name in dict.fromkeys(found) if name]


EVENT_WINDOW = 1000


def run_states(
    run: WorkflowRun, edges: Iterable[tuple[str, str]], executors: Iterable[str] = ()
) -> dict[str, str]:
    """Every executor's state for this run now (events, plus what is running right now).

    Only the latest ``EVENT_WINDOW`` events are folded, so a 1000-superstep loop costs what a
    short run does; an executor whose last event is older than that ran long ago, and shows
    as done if it ever completed.
    """
    rows = selectors.run_executor_events(run.pk, limit=EVENT_WINDOW)
    states = fold_states(rows)
    if len(rows) == EVENT_WINDOW:
        unseen = [name for name in executors if name not in states]
        for name in selectors.executors_completed(run.pk, unseen):
            states[name] = "done"
    if run.status not in (RunStatus.RUNNING, RunStatus.CANCELLED):
        return states
    if run.status == RunStatus.CANCELLED:
        for name, state in list(states.items()):
            if state in ("running", "waiting"):
                states[name] = "cancelled"
    checkpoint = run.latest_checkpoint if run.latest_checkpoint_id else None
    if checkpoint is not None:
        at_work = "running" if run.status == RunStatus.RUNNING else "cancelled"
        for name in next_executors(documents.checkpoint_document(checkpoint), edges):
            states[name] = at_work
    return states


def run_graph(run: WorkflowRun) -> tuple[GraphView | None, dict[str, str]]:
    """The annotated graph the template draws, and the states it was drawn with."""
    found = workflow_layout(run.workflow_name)
    if found is None:
        return None, {}
    layout, edges = found
    states = run_states(run, edges, [node.id for node in layout.nodes])
    return layout.annotate(states), states
