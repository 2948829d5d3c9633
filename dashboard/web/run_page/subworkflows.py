"""Sub-workflows on the run page: a workflow used as one executor of another (MAF's
``WorkflowExecutor``) is drawn as a node that opens onto its inner graph and its state.

Where the inner state comes from: the inner workflow has no checkpoints of its own; the outer
checkpoint carries its whole run under ``executor_states[<node id>]["sub_workflow_checkpoint"]``
(a ``WorkflowCheckpoint.to_dict()``, stored once more through the outer codec, which wraps any
dict holding a ``"$t"`` key in a ``{"$t": "dict", "v": [[key, value], ...]}`` pair list).
``nested_document`` undoes that one wrapping, with no type decoded, so the panel reads exactly
what a resume would restore.

The inner workflow's executor events do not reach the outer run (MAF does not forward them
either), so the inner executors' states come from that nested checkpoint alone: waiting (it
asked a question that is still open), running (a message is on its way to it while the run
runs), done (it lies upstream of those, or the inner run finished), else idle.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dashboard import catalog, selectors
from dashboard.models import ApprovalStatus, Checkpoint, RunStatus, WorkflowRun
from dashboard.renderers.diff_values import tree
from dashboard.renderers.graph_layout import GraphLayout, GraphView
from dashboard.renderers.workflow_graph import inner_description, layout_of, node_info

__all__ = [
    "SubworkflowPanel",
    "inner_states",
    "nested_document",
    "panel",
    "panels",
]

NESTED_KEY = "sub_workflow_checkpoint"


@functools.lru_cache(maxsize=64)
def _inner_layout(
    workflow_name: str, signature_hash: str, executor_id: str
) -> tuple[GraphLayout, tuple[tuple[str, str], ...], str] | None:
    description = catalog.describe(workflow_name).to_dict()
    inner = inner_description(description, executor_id)
    if inner is None:
        return None
    layout, edges = layout_of(inner)
    return layout, edges, str(inner.get("name") or executor_id)


def subworkflow_ids(workflow_name: str) -> list[str]:
    """The outer graph's sub-workflow nodes, in the graph's order ([] when not registered, or
    for a functional workflow, which has no graph)."""
    if catalog.is_functional(workflow_name):
        return []
    try:
        description = catalog.describe(workflow_name).to_dict()
    except catalog.UnknownWorkflowError:
        return []
    return [eid for eid, info in node_info(description).items() if info.kind == "subworkflow"]


# -------------------------------------------------------------------------- the nested checkpoint


def _unwrap(value: Any, depth: int = 0) -> Any:
    """Undo the outer codec's pair-list wrapping of dicts (the only tag plain JSON gets)."""
    if depth > 200:
        return value
    if isinstance(value, list):
        return [_unwrap(item, depth + 1) for item in value]
    if not isinstance(value, dict):
        return value
    pairs = value.get("v")
    if (
        set(value) == {"$t", "v"}
        and value["$t"] == "dict"
        and isinstance(pairs, list)
        and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in pairs)
    ):
        return {key: _unwrap(item, depth + 1) for key, item in pairs}
    return {key: _unwrap(item, depth + 1) for key, item in value.items()}


def nested_document(document: Mapping[str, Any], executor_id: str) -> dict[str, Any] | None:
    """The inner run's checkpoint (``to_dict()`` form) saved in an outer checkpoint document,
    or None when the inner workflow had not run yet at that checkpoint."""
    states = document.get("executor_states") or {}
    own = states.get(executor_id) if isinstance(states, Mapping) else None
    if not isinstance(own, Mapping):
        return None
    own = _unwrap(dict(own))
    nested = own.get(NESTED_KEY)
    return nested if isinstance(nested, dict) else None


def inner_states(
    nested: Mapping[str, Any] | None, edges: Iterable[tuple[str, str]], *, active: bool
) -> dict[str, str]:
    """Each inner executor's state at that checkpoint (see the module docstring)."""
    if not nested:
        return {}
    edge_list = list(edges)
    states: dict[str, str] = {}
    pending = nested.get("pending_request_info_events") or {}
    for event in pending.values() if isinstance(pending, Mapping) else []:
        if isinstance(event, Mapping) and event.get("source_executor_id"):
            states[str(event["source_executor_id"])] = "waiting"
    queued: list[str] = []
    for message in nested.get("messages") or []:
        if isinstance(message, Mapping):
            target = message.get("target_id") or message.get("target")
            if target:
                queued.append(str(target))
            else:
                source = str(message.get("source_id") or message.get("source") or "")
                queued.extend(t for s, t in edge_list if s == source)
    for name in queued:
        states.setdefault(name, "running" if active else "idle")
    reached = set(states)
    if reached:
        predecessors: dict[str, set[str]] = {}
        for source, target in edge_list:
            predecessors.setdefault(target, set()).add(source)
        frontier = list(reached)
        while frontier:
            for source in predecessors.get(frontier.pop(), ()):
                if source not in states:
                    states[source] = "done"
                    frontier.append(source)
    elif int(nested.get("iteration_count") or 0) > 0:
        # Finished: nothing waits, nothing is in flight, and it ran at least one superstep.
        for source, target in edge_list:
            states.setdefault(source, "done")
            states.setdefault(target, "done")
    return states


# --------------------------------------------------------------------------------- the panel


@dataclass
class InnerRequest:
    request_id: str
    executor_id: str
    data: Any
    inbox_request_id: str = ""  # the approval's id when the inbox holds it, still pending
    tree_id: str = ""  # the DOM id of its JSON tree


@dataclass
class SubworkflowPanel:
    """What the run page shows for one sub-workflow node at one outer checkpoint."""

    index: int
    executor_id: str
    name: str
    graph: GraphView
    checkpoint_id: str = ""
    checkpoint_superstep: int | None = None
    is_latest: bool = True
    started: bool = False
    finished: bool = False
    inner_superstep: int = 0
    state: Any = None
    executor_states: Any = None
    requests: list[InnerRequest] = field(default_factory=list)
    checkpoints: list[selectors.CheckpointRow] = field(default_factory=list)
    open: bool = False

    @property
    def dom_id(self) -> str:
        # Executor ids are user data: DOM ids are made from the node's position instead.
        return f"subworkflow-{self.index}"


def _checkpoint_for(run: WorkflowRun, checkpoint_id: str | None) -> Checkpoint | None:
    if checkpoint_id:
        found = selectors.checkpoint_get(run.pk, checkpoint_id)
        if found is not None:
            return found
    latest: Checkpoint | None = run.latest_checkpoint
    return latest


def panel(
    run: WorkflowRun,
    executor_id: str,
    *,
    checkpoint_id: str | None = None,
    index: int = 0,
    rows: list[selectors.CheckpointRow] | None = None,
) -> SubworkflowPanel | None:
    """The panel of one sub-workflow node at ``checkpoint_id`` (the latest when not given or
    not one of this run's), or None when the node is not a sub-workflow of the run's graph."""
    try:
        workflow = catalog.describe(run.workflow_name)
    except catalog.UnknownWorkflowError:
        return None
    found = _inner_layout(run.workflow_name, workflow.graph_signature_hash, executor_id)
    if found is None:
        return None
    layout, edges, name = found
    checkpoint = _checkpoint_for(run, checkpoint_id)
    latest_id = run.latest_checkpoint_id
    nested = None
    if checkpoint is not None:
        nested = nested_document(selectors.checkpoint_document(checkpoint, run), executor_id)
    is_latest = checkpoint is None or checkpoint.checkpoint_id == latest_id
    active = is_latest and run.status == RunStatus.RUNNING
    states = inner_states(nested, edges, active=active)
    result = SubworkflowPanel(
        index=index,
        executor_id=executor_id,
        name=name,
        graph=layout.annotate(states),
        checkpoint_id=checkpoint.checkpoint_id if checkpoint is not None else "",
        checkpoint_superstep=checkpoint.superstep if checkpoint is not None else None,
        is_latest=is_latest,
        checkpoints=rows if rows is not None else selectors.run_checkpoint_rows(run.pk),
    )
    if nested is None:
        return result
    pending = nested.get("pending_request_info_events") or {}
    result.started = True
    result.inner_superstep = int(nested.get("iteration_count") or 0)
    result.finished = not pending and not nested.get("messages") and result.inner_superstep > 0
    result.state = tree(nested.get("state") or {})
    result.executor_states = tree(nested.get("executor_states") or {})
    open_ids = _open_approvals(run, list(pending)) if is_latest else {}
    for request_id, event in pending.items() if isinstance(pending, Mapping) else []:
        if not isinstance(event, Mapping):
            continue
        result.requests.append(
            InnerRequest(
                request_id=str(request_id),
                executor_id=str(event.get("source_executor_id") or ""),
                data=tree(event.get("data")),
                inbox_request_id=open_ids.get(str(request_id), ""),
                tree_id=f"{result.dom_id}-request-{len(result.requests)}",
            )
        )
    return result


def _open_approvals(run: WorkflowRun, request_ids: list[str]) -> dict[str, str]:
    """Engine request id -> inbox request id of the run's pending approvals among these (a
    propagated request keeps the inner request's id in the outer run)."""
    from dashboard.models import ApprovalRequest

    rows = ApprovalRequest.objects.filter(
        run=run,
        status=ApprovalStatus.PENDING,
        engine_run_id=run.engine_run_id,
        engine_request_id__in=request_ids,
    ).values_list("engine_request_id", "request_id")
    return {str(engine_id): str(request_id) for engine_id, request_id in rows}


def panels(
    run: WorkflowRun, *, open_id: str = "", checkpoint_id: str | None = None
) -> list[SubworkflowPanel]:
    """One panel per sub-workflow node of the run's graph; ``open_id`` opens one of them at
    ``checkpoint_id`` (the others show the latest checkpoint)."""
    ids = subworkflow_ids(run.workflow_name)
    if not ids:
        return []
    rows = selectors.run_checkpoint_rows(run.pk)
    found: list[SubworkflowPanel] = []
    for index, executor_id in enumerate(ids):
        chosen = checkpoint_id if executor_id == open_id else None
        one = panel(run, executor_id, checkpoint_id=chosen, index=index, rows=rows)
        if one is not None:
            one.open = executor_id == open_id
            found.append(one)
    return found
