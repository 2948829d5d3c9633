"""A workflow's description (``Workflow.to_dict()``) read as a graph and laid out: its edges,
its executors, what each node is (a sub-workflow, an output), and the layout of the whole.

The run page draws the registered workflow with it (``web.run_page.graph_state``) and every
sub-workflow's inner graph the same way (``web.run_page.subworkflows``); reading the
description is pure, so it lives with the layout rather than with the pages that look the
workflow up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.renderers.graph_layout import GraphLayout, NodeInfo, layout_graph

__all__ = ["executors", "graph_edges", "inner_description", "layout_of", "node_info"]


def graph_edges(description: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(source, target) pairs of a workflow's ``to_dict()`` edge groups."""
    edges: list[tuple[str, str]] = []
    for group in description.get("edge_groups") or []:
        for source in group.get("sources") or []:
            for target in group.get("targets") or []:
                edges.append((str(source), str(target)))
    return edges


def executors(description: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Each executor's description by id, from either form a description has had."""
    found = description.get("executors") or {}
    if isinstance(found, list):  # an older description listed them
        return {str(e.get("id")): e for e in found if isinstance(e, Mapping)}
    return {str(k): v if isinstance(v, Mapping) else {} for k, v in found.items()}


def inner_description(description: Mapping[str, Any], executor_id: str) -> Mapping[str, Any] | None:
    """The inner workflow's ``to_dict()`` when ``executor_id`` is a sub-workflow, else None."""
    inner = executors(description).get(executor_id, {}).get("workflow")
    return inner if isinstance(inner, Mapping) else None


def node_info(description: Mapping[str, Any]) -> dict[str, NodeInfo]:
    """Kind, caption and output role of each executor of a workflow description."""
    outputs = description.get("output_executors")
    intermediates = set(description.get("intermediate_executors") or [])
    info: dict[str, NodeInfo] = {}
    for executor_id, executor in executors(description).items():
        inner = executor.get("workflow")
        if outputs is None:
            # No designation: every yield is an output, so the executors that may yield are.
            role = "output" if executor.get("workflow_output_types") else ""
        elif executor_id in outputs:
            role = "output"
        else:
            role = "intermediate" if executor_id in intermediates else ""
        if isinstance(inner, Mapping):
            caption = f"sub-workflow: {inner.get('name') or executor_id}"
            info[executor_id] = NodeInfo("subworkflow", caption, role)
        elif role:
            info[executor_id] = NodeInfo(role=role)
    return info


def layout_of(description: Mapping[str, Any]) -> tuple[GraphLayout, tuple[tuple[str, str], ...]]:
    """The laid-out graph of a workflow description, with its edges (as the page colours them)."""
    edges = graph_edges(description)
    names = list(executors(description))
    start = str(description.get("start") or description.get("start_executor_id") or "")
    return layout_graph(names, edges, start, node_info(description)), tuple(edges)
