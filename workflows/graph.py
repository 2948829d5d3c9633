"""The built, validated graph and its signature."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .edges import EdgeGroup
from .exceptions import GraphMismatchError, WorkflowValidationError
from .executor import Executor
from .registry import default_registry
from .typecheck import is_compatible

__all__ = ["Graph", "describe_signature_change"]


@dataclass
class Graph:
    executors: dict[str, Executor]
    start_id: str
    groups: list[EdgeGroup]
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

    @property
    def fan_in_groups(self) -> list[EdgeGroup]:
        return [g for g in self.groups if g.kind == "fan_in"]

    # ------------------------------------------------------------------------------ validation

    def validate(self) -> None:
        """Refuse graphs that cannot work, naming the executors at fault."""
        self._check_duplicate_edges()
        self._check_reachable()
        self._check_output_types()

    def _check_duplicate_edges(self) -> None:
        seen: dict[tuple[str, str], str] = {}
        for group in self.groups:
            pairs = (
                [(s, group.targets[0]) for s in group.sources]
                if group.kind == "fan_in"
                else [(group.sources[0], t) for t in group.targets]
            )
            for pair in pairs:
                if pair in seen:
                    raise WorkflowValidationError(
                        f"duplicate edge {pair[0]!r} -> {pair[1]!r} (already added by a "
                        f"{seen[pair]} group)"
                    )
                seen[pair] = group.kind

    def _check_reachable(self) -> None:
        reached = {self.start_id}
        frontier = [self.start_id]
        while frontier:
            for group in self.outgoing.get(frontier.pop(), []):
                for target in group.targets:
                    if target not in reached:
                        reached.add(target)
                        frontier.append(target)
        unreachable = [eid for eid in self.executors if eid not in reached]
        if unreachable:
            raise WorkflowValidationError(
                f"executor(s) {unreachable} cannot be reached from the start executor "
                f"{self.start_id!r}"
            )

    def _check_output_types(self) -> None:
        for eid, ex in self.executors.items():
            declared = ex.output_types
            if not declared:
                continue
            groups = self.outgoing.get(eid, [])
            if not groups:
                raise WorkflowValidationError(
                    f"executor {eid!r} declares it sends {_names(declared)} but has no outgoing "
                    "edges"
                )
            for out_type in declared:
                if not any(self._group_accepts(g, out_type) for g in groups):
                    targets = sorted({t for g in groups for t in g.targets})
                    raise WorkflowValidationError(
                        f"executor {eid!r} declares it sends {_names([out_type])}, which none of "
                        f"its targets {targets} handles"
                    )

    def _group_accepts(self, group: EdgeGroup, out_type: Any) -> bool:
        for target in group.targets:
            wanted = list[out_type] if group.kind == "fan_in" else out_type
            for accepted in self.executors[target].input_types:
                if is_compatible(wanted, accepted):
                    return True
        return False

    def register_types(self) -> None:
        """Every type the graph's handlers name may appear in its checkpoints."""
        for ex in self.executors.values():
            for spec in ex.handler_specs:
                for annotation in (spec.message_type, *(spec.output_types or ()),
                                   *(spec.workflow_output_types or ())):
                    default_registry.register_annotation(annotation)
            for rspec in ex.response_handler_specs:
                for annotation in (rspec.request_type, rspec.response_type,
                                   *(rspec.output_types or ()),
                                   *(rspec.workflow_output_types or ())):
                    default_registry.register_annotation(annotation)

    def check_signature(self, checkpoint_hash: str, checkpoint_signature: dict[str, Any]) -> None:
        if checkpoint_hash == self.signature_hash:
            return
        change = describe_signature_change(checkpoint_signature, self.signature)
        raise GraphMismatchError(
            "this workflow's graph differs from the one that wrote the checkpoint"
            f" ({change}); rebuild the original graph to resume"
        )


def _names(types_: list[Any]) -> str:
    return ", ".join(getattr(t, "__name__", None) or repr(t) for t in types_)


def describe_signature_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """A sentence naming what changed between two graph signatures."""
    if not old:
        return "the checkpoint does not record its graph"
    parts: list[str] = []
    if old.get("start") != new.get("start"):
        parts.append(f"start executor {old.get('start')!r} -> {new.get('start')!r}")
    old_ex: dict[str, str] = old.get("executors", {})
    new_ex: dict[str, str] = new.get("executors", {})
    added = sorted(set(new_ex) - set(old_ex))
    removed = sorted(set(old_ex) - set(new_ex))
    changed = sorted(k for k in set(old_ex) & set(new_ex) if old_ex[k] != new_ex[k])
    if added:
        parts.append(f"executors added: {added}")
    if removed:
        parts.append(f"executors removed: {removed}")
    for key in changed:
        parts.append(f"executor {key!r} changed class {old_ex[key]} -> {new_ex[key]}")
    old_edges = {json.dumps(g, sort_keys=True) for g in old.get("edge_groups", [])}
    new_edges = {json.dumps(g, sort_keys=True) for g in new.get("edge_groups", [])}
    for g in sorted(new_edges - old_edges):
        parts.append(f"edges added: {_edge_text(json.loads(g))}")
    for g in sorted(old_edges - new_edges):
        parts.append(f"edges removed: {_edge_text(json.loads(g))}")
    return "; ".join(parts) or "the signature hash differs"


def _edge_text(group: dict[str, Any]) -> str:
    text = f"{group['kind']} {','.join(group['sources'])} -> {','.join(group['targets'])}"
    if "condition" in group:
        text += f" if {group['condition']}"
    return text
