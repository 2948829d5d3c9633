"""Moving a checkpoint onto a changed graph: what the new version can carry, and the move.

Resuming refuses a checkpoint written by another graph (``GraphMismatchError``), as MAF does.
A deployment that changed a workflow still has runs paused on the old graph; these functions
decide, from what the checkpoint actually holds, whether the new graph can continue it:

* every executor that saved state still exists and is still the same kind of executor (its
  ``on_checkpoint_restore`` gets what it once saved);
* every message in flight still has somewhere to go: its target exists and takes it, or its
  source still has an edge to an executor with a handler for it;
* every fan-in buffer belongs to a fan-in group the new graph still has;
* every pending request's executor still exists and still answers that request.

Added executors and edges, and removed or changed parts the checkpoint does not touch, are
compatible. Edge conditions are not evaluated: a condition decides per message at run time,
as it would have on the old graph.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .checkpoint import CheckpointKind, WorkflowCheckpoint, WorkflowMessage, now_timestamp
from .exceptions import CheckpointMigrationError
from .graph import Graph, describe_signature_change

if TYPE_CHECKING:
    from .workflow import Workflow

__all__ = [
    "CheckpointMigration",
    "check_checkpoint_migration",
    "migrate_checkpoint",
]


@dataclass(frozen=True, slots=True)
class CheckpointMigration:
    """What moving one checkpoint onto another graph means.

    ``changes`` names what differs between the two graphs (empty when they are the same);
    ``blockers`` lists what the checkpoint holds that the new graph cannot carry, each naming
    the executor, message or request concerned.
    """

    from_hash: str
    to_hash: str
    changes: str
    blockers: tuple[str, ...]

    @property
    def same_graph(self) -> bool:
        return self.from_hash == self.to_hash

    @property
    def compatible(self) -> bool:
        """The checkpoint can continue on the new graph with nothing lost."""
        return not self.blockers


def check_checkpoint_migration(
    checkpoint: WorkflowCheckpoint, workflow: Workflow
) -> CheckpointMigration:
    """Whether ``workflow`` can continue ``checkpoint``, and if not, why not."""
    graph = workflow._graph
    if checkpoint.graph_signature_hash == graph.signature_hash:
        return CheckpointMigration(graph.signature_hash, graph.signature_hash, "", ())
    changes = describe_signature_change(checkpoint.graph_signature, graph.signature)
    return CheckpointMigration(
        checkpoint.graph_signature_hash,
        graph.signature_hash,
        changes,
        tuple(_blockers(checkpoint, graph)),
    )


def migrate_checkpoint(
    checkpoint: WorkflowCheckpoint,
    workflow: Workflow,
    *,
    run_id: str | None = None,
    discard_unmatched: bool = False,
) -> WorkflowCheckpoint:
    """A new checkpoint, following ``checkpoint``, that ``workflow`` resumes from.

    It holds the same messages, state, buffers and requests under the new graph's signature;
    its metadata records the move (``migrated_from``, ``changes``, and what was dropped).
    ``run_id`` starts another lineage (None keeps the checkpoint's). With
    ``discard_unmatched`` whatever the new graph cannot carry is dropped instead of refused:
    removed executors' state, messages nothing takes, orphaned buffers and requests.

    Raises:
        CheckpointMigrationError: the new graph cannot carry part of the checkpoint (and
            ``discard_unmatched`` is not set), listing every part.
    """
    graph = workflow._graph
    report = check_checkpoint_migration(checkpoint, workflow)
    if report.blockers and not discard_unmatched:
        raise CheckpointMigrationError(
            f"checkpoint {checkpoint.checkpoint_id} cannot continue on the new graph "
            f"({report.changes}): " + "; ".join(report.blockers),
            report.blockers,
        )
    kept = _carried(checkpoint, graph) if report.blockers else checkpoint
    metadata = {
        **checkpoint.metadata,
        "kind": str(CheckpointKind.MIGRATION),
        "migrated_from": checkpoint.graph_signature_hash,
        "changes": report.changes,
    }
    if report.blockers:
        metadata["discarded"] = list(report.blockers)
    return replace(
        kept,
        checkpoint_id=uuid.uuid4().hex,
        run_id=run_id or checkpoint.run_id,
        previous_checkpoint_id=checkpoint.checkpoint_id,
        graph_signature_hash=graph.signature_hash,
        graph_signature=graph.signature,
        metadata=metadata,
        timestamp=now_timestamp(),
    )


# ------------------------------------------------------------------------------------- rules


def _blockers(checkpoint: WorkflowCheckpoint, graph: Graph) -> list[str]:
    found: list[str] = []
    old_types: dict[str, Any] = checkpoint.graph_signature.get("executors", {})
    for executor_id, state in checkpoint.executor_states.items():
        if not state:
            continue
        problem = _executor_problem(executor_id, old_types, graph)
        if problem:
            found.append(f"saved state of {problem}")
    for message in checkpoint.message_list():
        if not _message_lands(message, graph):
            found.append(_message_text(message))
    fan_in_keys = {group.key for group in graph.fan_in_groups}
    for key, slot in checkpoint.edge_states.items():
        if any(slot.values()) and key not in fan_in_keys:
            found.append(f"fan-in buffer {key!r}: the new graph has no such fan-in edge group")
    for request_id, event in checkpoint.pending_request_info_events.items():
        executor = graph.executors.get(event.source_executor_id)
        if executor is None:
            found.append(
                f"pending request {request_id}: executor {event.source_executor_id!r} was removed"
            )
        elif executor.response_type_for(event.data) is None:
            found.append(
                f"pending request {request_id}: executor {event.source_executor_id!r} no longer "
                f"answers {type(event.data).__name__} requests"
            )
    return found


def _executor_problem(executor_id: str, old_types: dict[str, Any], graph: Graph) -> str | None:
    executor = graph.executors.get(executor_id)
    if executor is None:
        return f"executor {executor_id!r}, which was removed"
    before, after = old_types.get(executor_id), executor.signature_type()
    if before is None or before == after:
        return None
    if _kind(before) != _kind(after):
        return f"executor {executor_id!r}, now {_kind(after)} (was {_kind(before)})"
    if isinstance(before, dict) and isinstance(after, dict):
        # The wrapper's state is the child's own checkpoint, written by the old child graph.
        inner = describe_signature_change(
            before.get("sub_workflow", {}), after.get("sub_workflow", {})
        )
        return f"sub-workflow {executor_id!r}, whose graph changed ({inner})"
    return None


def _kind(signature_type: Any) -> str:
    if isinstance(signature_type, dict):
        return str(signature_type.get("type"))
    return str(signature_type)


def _message_lands(message: WorkflowMessage, graph: Graph) -> bool:
    executors = graph.executors
    if message.kind == "response" or message.source_id.startswith("internal:"):
        target = executors.get(message.target_id or "")
        return target is not None and target.can_handle(message)
    for group in graph.outgoing.get(message.source_id, ()):
        for target_id in group.targets:
            if message.target_id is not None and target_id != message.target_id:
                continue
            if (
                group.kind == "fan_in"
                or executors[target_id].find_handler(message.data) is not None
            ):
                return True
    return False


def _message_text(message: WorkflowMessage) -> str:
    kind = type(message.data).__name__
    where = f"{kind} message from {message.source_id!r}"
    if message.target_id is not None:
        where += f" to {message.target_id!r}"
    return f"{where}: nothing in the new graph takes it"


def _carried(checkpoint: WorkflowCheckpoint, graph: Graph) -> WorkflowCheckpoint:
    """The checkpoint without what the new graph cannot carry."""
    old_types: dict[str, Any] = checkpoint.graph_signature.get("executors", {})
    fan_in_keys = {group.key for group in graph.fan_in_groups}
    return replace(
        checkpoint,
        executor_states={
            eid: state
            for eid, state in checkpoint.executor_states.items()
            if not state or _executor_problem(eid, old_types, graph) is None
        },
        messages=[m for m in checkpoint.message_list() if _message_lands(m, graph)],  # type: ignore[arg-type]
        edge_states={k: v for k, v in checkpoint.edge_states.items() if k in fan_in_keys},
        pending_request_info_events={
            rid: event
            for rid, event in checkpoint.pending_request_info_events.items()
            if (executor := graph.executors.get(event.source_executor_id)) is not None
            and executor.response_type_for(event.data) is not None
        },
    )
