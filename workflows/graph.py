"""The built, validated graph and its signature."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .edges import EdgeGroup, InternalEdgeGroup
from .exceptions import GraphMismatchError
from .executor import Executor
from .registry import default_registry

__all__ = ["Graph", "describe_signature_change"]


@dataclass
class Graph:
    executors: dict[str, Executor]
    start_id: str
    groups: list[EdgeGroup]
    # None: no designation, every yield is an output. Not part of the signature: it changes
    # only how yields are labelled, never what runs (MAF does not hash it either).
    output_executor_ids: frozenset[str] | None = None
    intermediate_executor_ids: frozenset[str] = frozenset()
    outgoing: dict[str, list[EdgeGroup]] = field(default_factory=dict)
    signature: dict[str, Any] = field(default_factory=dict)
    signature_hash: str = ""

    def __post_init__(self) -> None:
        for group in self.groups:
            for source in group.sources:
                self.outgoing.setdefault(source, []).append(group)
        self.signature = {
            "start": self.start_id,
            "executors": {eid: ex.signature_type() for eid, ex in self.executors.items()},
            "edge_groups": sorted(
                (g.signature() for g in self.groups), key=lambda s: json.dumps(s, sort_keys=True)
            ),
        }
        canonical = json.dumps(self.signature, sort_keys=True, separators=(",", ":"))
        self.signature_hash = hashlib.sha256(canonical.encode()).hexdigest()

    @functools.cached_property
    def executor_ids(self) -> set[str]:
        return set(self.executors)

    @functools.cached_property
    def agent_names(self) -> dict[str, str]:
        """Agent name -> executor id for agent executors whose agent's name is not an executor
        id of its own, and is held by one executor only (the names ``run()``'s agent arguments
        may target)."""
        names: dict[str, str] = {}
        twice: set[str] = set()
        for executor_id, executor in self.executors.items():
            name = getattr(getattr(executor, "agent", None), "name", None)
            if not isinstance(name, str) or not name or name in self.executors:
                continue
            if name in names:
                twice.add(name)
            names[name] = executor_id
        return {name: eid for name, eid in names.items() if name not in twice}

    @property
    def fan_in_groups(self) -> list[EdgeGroup]:
        return [g for g in self.groups if g.kind == "fan_in"]

    @property
    def described_groups(self) -> list[EdgeGroup]:
        """Every group as ``Workflow.edge_groups`` shows it: the engine's own delivery to each
        executor (``InternalEdgeGroup``, as MAF lists them) first, then the routing groups."""
        return [*(InternalEdgeGroup(eid) for eid in self.executors), *self.groups]

    # ------------------------------------------------------------------------ output designation

    def classify_yield(self, executor_id: str) -> str | None:
        """What ``ctx.yield_output`` from this executor becomes: ``"output"``, ``"intermediate"``,
        or None when a designation exists and does not list the executor (the yield is hidden)."""
        if self.output_executor_ids is None or executor_id in self.output_executor_ids:
            return "output"
        if executor_id in self.intermediate_executor_ids:
            return "intermediate"
        return None

    # ------------------------------------------------------------------------------ validation

    def register_types(self) -> None:
        """Every type the graph's handlers name may appear in its checkpoints."""
        for ex in self.executors.values():
            for spec in ex.handler_specs:
                for annotation in (
                    spec.message_type,
                    *(spec.output_types or ()),
                    *(spec.workflow_output_types or ()),
                ):
                    default_registry.register_annotation(annotation)
            for rspec in ex.response_handler_specs:
                for annotation in (
                    rspec.request_type,
                    rspec.response_type,
                    *(rspec.output_types or ()),
                    *(rspec.workflow_output_types or ()),
                ):
                    default_registry.register_annotation(annotation)

    def check_signature(self, checkpoint_hash: str, checkpoint_signature: dict[str, Any]) -> None:
        if checkpoint_hash == self.signature_hash:
            return
        change = describe_signature_change(checkpoint_signature, self.signature)
        raise GraphMismatchError(
            "this workflow's graph differs from the one that wrote the checkpoint"
            f" ({change}); rebuild the original graph to resume"
        )


def describe_signature_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A sentence naming what changed between two graph signatures."""
    if not old:
        return "the checkpoint does not record its graph"
    parts: list[str] = []
    if old.get("start") != new.get("start"):
        parts.append(f"start executor {old.get('start')!r} -> {new.get('start')!r}")
    old_ex: dict[str, Any] = old.get("executors", {})
    new_ex: dict[str, Any] = new.get("executors", {})
    added = sorted(set(new_ex) - set(old_ex))
    removed = sorted(set(old_ex) - set(new_ex))
    changed = sorted(k for k in set(old_ex) & set(new_ex) if old_ex[k] != new_ex[k])
    if added:
        parts.append(f"executors added: {added}")
    if removed:
        parts.append(f"executors removed: {removed}")
    for key in changed:
        before, after = old_ex[key], new_ex[key]
        if (
            isinstance(before, dict)
            and isinstance(after, dict)
            and before.get("type") == after.get("type")
            and "sub_workflow" in before
        ):
            inner = describe_signature_change(before["sub_workflow"], after.get("sub_workflow", {}))
            parts.append(f"sub-workflow {key!r}: {inner}")
        else:
            parts.append(f"executor {key!r} changed class {_kind(before)} -> {_kind(after)}")
    old_edges = {json.dumps(g, sort_keys=True) for g in old.get("edge_groups", [])}
    new_edges = {json.dumps(g, sort_keys=True) for g in new.get("edge_groups", [])}
    for g in sorted(new_edges - old_edges):
        parts.append(f"edges added: {_edge_text(json.loads(g))}")
    for g in sorted(old_edges - new_edges):
        parts.append(f"edges removed: {_edge_text(json.loads(g))}")
    return "; ".join(parts) or "the signature hash differs"


def _kind(signature: Any) -> Any:
    return signature.get("type") if isinstance(signature, dict) else signature


def _edge_text(group: dict[str, Any]) -> str:
    text = f"{group['kind']} {','.join(group['sources'])} -> {','.join(group['targets'])}"
    if "condition" in group:
        text += f" if {group['condition']}"
    return text
