"""Moving a paused run onto a changed graph: compatible changes continue, others say what
they would lose, and nothing is lost unless the caller asks to discard it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Never

import pytest

from workflows import (
    CheckpointMigrationError,
    Executor,
    GraphMismatchError,
    InMemoryCheckpointStorage,
    WorkflowBuilder,
    WorkflowCheckpoint,
    WorkflowContext,
    WorkflowRunState,
    check_checkpoint_migration,
    handler,
    migrate_checkpoint,
    response_handler,
)


@dataclass
class Ask:
    amount: int


class Counter(Executor):
    """Counts what it saw (saved in checkpoints) and passes the amount on."""

    def __init__(self, id: str = "counter") -> None:
        super().__init__(id=id)
        self.seen = 0

    @handler
    async def take(self, amount: int, ctx: WorkflowContext[int]) -> None:
        self.seen += 1
        await ctx.send_message(amount)

    async def on_checkpoint_save(self) -> dict[str, Any]:
        return {"seen": self.seen}

    async def on_checkpoint_restore(self, state: dict[str, Any]) -> None:
        self.seen = state.get("seen", 0)


class OtherCounter(Counter):
    """Same id, another class: its saved state may mean something else."""


class Reviewer(Executor):
    def __init__(self) -> None:
        super().__init__(id="reviewer")

    @handler
    async def ask(self, amount: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(Ask(amount), bool)

    @response_handler
    async def decided(self, ask: Ask, approved: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{ask.amount}: {'approved' if approved else 'rejected'}")


class Notifier(Executor):
    def __init__(self) -> None:
        super().__init__(id="notifier")

    @handler
    async def note(self, amount: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"noted {amount}")


def version_1(storage: Any) -> Any:
    counter, reviewer = Counter(), Reviewer()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=storage, name="spend")
        .add_edge(counter, reviewer)
        .build()
    )


def with_a_notifier(storage: Any) -> Any:
    counter, reviewer, notifier = Counter(), Reviewer(), Notifier()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=storage, name="spend")
        .add_edge(counter, reviewer)
        .add_edge(reviewer, notifier)
        .build()
    )


def counter_renamed(storage: Any) -> Any:
    counter, reviewer = Counter("tally"), Reviewer()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=storage, name="spend")
        .add_edge(counter, reviewer)
        .build()
    )


def counter_replaced(storage: Any) -> Any:
    counter, reviewer = OtherCounter(), Reviewer()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=storage, name="spend")
        .add_edge(counter, reviewer)
        .build()
    )


def counter_alone(storage: Any) -> Any:
    return WorkflowBuilder(
        start_executor=Counter(), checkpoint_storage=storage, name="spend"
    ).build()


def without_a_reviewer(storage: Any) -> Any:
    counter, notifier = Counter(), Notifier()
    return (
        WorkflowBuilder(start_executor=counter, checkpoint_storage=storage, name="spend")
        .add_edge(counter, notifier)
        .build()
    )


async def paused_on_version_1(storage: InMemoryCheckpointStorage) -> WorkflowCheckpoint:
    result = await version_1(storage).run(250)
    assert result.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
    return await storage.get_latest(workflow_name="spend")


async def one_superstep_in(storage: InMemoryCheckpointStorage) -> WorkflowCheckpoint:
    """The checkpoint after the counter ran: a message to the reviewer is in flight."""
    await version_1(storage).run(250)
    checkpoints = sorted(
        await storage.list_checkpoints(workflow_name="spend"), key=lambda c: c.iteration_count
    )
    return next(c for c in checkpoints if "counter" in c.messages)


async def test_the_same_graph_needs_no_migration() -> None:
    storage = InMemoryCheckpointStorage()
    paused = await paused_on_version_1(storage)
    report = check_checkpoint_migration(paused, version_1(storage))
    assert report.same_graph and report.compatible
    assert report.changes == "" and report.blockers == ()


async def test_an_added_executor_is_compatible_and_the_paused_run_finishes_on_the_new_graph() -> (
    None
):
    storage = InMemoryCheckpointStorage()
    paused = await paused_on_version_1(storage)
    new = with_a_notifier(storage)

    report = check_checkpoint_migration(paused, new)
    assert report.compatible and not report.same_graph
    assert "executors added: ['notifier']" in report.changes

    with pytest.raises(GraphMismatchError):  # as MAF: never resumed on another graph silently
        await new.run(checkpoint_id=paused.checkpoint_id)

    moved = migrate_checkpoint(paused, new)
    await storage.save(moved)
    (request_id,) = moved.pending_request_info_events
    result = await with_a_notifier(storage).run(
        checkpoint_id=moved.checkpoint_id, responses={request_id: True}
    )
    assert result.get_outputs() == ["250: approved"]


async def test_a_migrated_checkpoint_follows_the_old_one_and_records_the_move() -> None:
    storage = InMemoryCheckpointStorage()
    paused = await paused_on_version_1(storage)
    new = with_a_notifier(storage)

    moved = migrate_checkpoint(paused, new)
    assert moved.checkpoint_id != paused.checkpoint_id
    assert moved.previous_checkpoint_id == paused.checkpoint_id
    assert moved.run_id == paused.run_id
    assert moved.graph_signature_hash == new.graph_signature_hash
    assert moved.iteration_count == paused.iteration_count
    assert moved.executor_states == paused.executor_states
    assert moved.pending_request_info_events.keys() == paused.pending_request_info_events.keys()
    assert moved.metadata["kind"] == "migration"
    assert moved.metadata["migrated_from"] == paused.graph_signature_hash
    assert "notifier" in moved.metadata["changes"]
    assert migrate_checkpoint(paused, new, run_id="branch-2").run_id == "branch-2"
    # The original is untouched: it still resumes on the old graph.
    assert paused.graph_signature_hash == version_1(storage).graph_signature_hash


async def test_state_of_a_removed_executor_blocks_the_move_and_names_the_executor() -> None:
    storage = InMemoryCheckpointStorage()
    paused = await paused_on_version_1(storage)
    report = check_checkpoint_migration(paused, counter_renamed(storage))
    assert not report.compatible
    assert report.blockers == ("saved state of executor 'counter', which was removed",)

    with pytest.raises(CheckpointMigrationError) as refused:
        migrate_checkpoint(paused, counter_renamed(storage))
    assert refused.value.blockers == report.blockers
    assert "counter" in str(refused.value)


async def test_discarding_drops_only_what_the_new_graph_cannot_carry() -> None:
    storage = InMemoryCheckpointStorage()
    paused = await paused_on_version_1(storage)
    moved = migrate_checkpoint(paused, counter_renamed(storage), discard_unmatched=True)
    assert "counter" not in moved.executor_states
    assert moved.pending_request_info_events.keys() == paused.pending_request_info_events.keys()
    assert moved.metadata["discarded"] == ["saved state of executor 'counter', which was removed"]

    await storage.save(moved)
    (request_id,) = moved.pending_request_info_events
    result = await counter_renamed(storage).run(
        checkpoint_id=moved.checkpoint_id, responses={request_id: False}
    )
    assert result.get_outputs() == ["250: rejected"]


async def test_an_executor_of_another_class_with_saved_state_blocks_the_move() -> None:
    storage = InMemoryCheckpointStorage()
    paused = await paused_on_version_1(storage)
    (blocker,) = check_checkpoint_migration(paused, counter_replaced(storage)).blockers
    assert blocker.startswith("saved state of executor 'counter', now ")
    assert "OtherCounter" in blocker and "(was " in blocker


async def test_a_pending_request_whose_executor_is_gone_blocks_the_move() -> None:
    storage = InMemoryCheckpointStorage()
    paused = await paused_on_version_1(storage)
    (request_id,) = paused.pending_request_info_events
    (blocker,) = check_checkpoint_migration(paused, without_a_reviewer(storage)).blockers
    assert blocker == f"pending request {request_id}: executor 'reviewer' was removed"


async def test_a_message_in_flight_with_nowhere_to_go_blocks_the_move() -> None:
    storage = InMemoryCheckpointStorage()
    earlier = await one_superstep_in(storage)
    assert check_checkpoint_migration(
        earlier, without_a_reviewer(storage)
    ).compatible  # notifier takes ints
    (blocker,) = check_checkpoint_migration(earlier, counter_alone(storage)).blockers
    assert blocker == "int message from 'counter': nothing in the new graph takes it"
    moved = migrate_checkpoint(earlier, counter_alone(storage), discard_unmatched=True)
    assert moved.message_list() == []


async def test_an_earlier_checkpoint_can_be_compatible_when_the_latest_is_not() -> None:
    # The operator's way out: move a checkpoint from before the removed part was reached.
    storage = InMemoryCheckpointStorage()
    await paused_on_version_1(storage)
    checkpoints = sorted(
        await storage.list_checkpoints(workflow_name="spend"), key=lambda c: c.iteration_count
    )
    first = checkpoints[0]
    report = check_checkpoint_migration(first, without_a_reviewer(storage))
    assert report.compatible, report.blockers

    moved = migrate_checkpoint(first, without_a_reviewer(storage))
    await storage.save(moved)
    result = await without_a_reviewer(storage).run(checkpoint_id=moved.checkpoint_id)
    assert result.get_outputs() == ["noted 250"]
