"""The retention contract: scenarios every storage's pruning must decide alike.

The rules are ``workflows.storage.retention``'s; this suite holds each way of pruning to them by
what survives, so a storage that gathers a fact wrongly (misses a pending request, a fork, a tie)
fails here even though it calls the same rules. Each scenario says what it saves and, written
out by hand, what must be left. Bind it to a way of pruning in a few lines::

    from workflows.testing_retention import EngineRetention, RetentionContract

    class TestMyStorageRetention(RetentionContract):
        @pytest.fixture
        def retention(self, tmp_path):
            return EngineRetention(lambda: MyStorage(tmp_path))

A binding is anything with ``survivors(scenario)``: it saves the scenario's checkpoints, prunes
with the scenario's rules and returns the ids left. ``EngineRetention`` does that with the
engine's ``prune``; the dashboard binds its database retention policies.

Like ``workflows.testing``, this module imports pytest, so the engine never imports it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import pytest

from .checkpoint import WorkflowCheckpoint
from .events import RequestInfoEvent
from .retention import prune
from .storage.protocol import CheckpointStorage

__all__ = [
    "SCENARIOS",
    "EngineRetention",
    "RetentionBinding",
    "RetentionContract",
    "RetentionScenario",
    "Saved",
    "pending_request",
]


@dataclass(frozen=True)
class Saved:
    """One checkpoint of a scenario: its id, its run (lineage), its age, whether a request is
    pending in it, the checkpoint of another run it forks from (only a run's first), and
    whether its timestamp is written without an offset (which every storage reads as UTC)."""

    id: str
    run: str
    age_days: float
    pending: bool = False
    forked_from: str | None = None
    naive: bool = False


@dataclass(frozen=True)
class RetentionScenario:
    name: str
    saved: tuple[Saved, ...]
    survivors: frozenset[str]
    keep_last: int | None = None
    older_than_days: int | None = None

    def checkpoints(self, now: dt.datetime) -> list[WorkflowCheckpoint]:
        """The checkpoints to save, in order; each follows the previous one of its run."""
        last: dict[str, str] = {}
        made = []
        for step, saved in enumerate(self.saved):
            pending = pending_request("q") if saved.pending else {}
            moment = now.astimezone(dt.UTC) - dt.timedelta(days=saved.age_days)
            made.append(
                WorkflowCheckpoint(
                    checkpoint_id=saved.id,
                    workflow_name="retention-contract",
                    run_id=saved.run,
                    graph_signature_hash="0" * 64,
                    timestamp=(moment.replace(tzinfo=None) if saved.naive else moment).isoformat(),
                    iteration_count=step,
                    previous_checkpoint_id=last.get(saved.run, saved.forked_from),
                    pending_request_info_events=pending,
                )
            )
            last[saved.run] = saved.id
        return made

    @property
    def older_than(self) -> dt.timedelta | None:
        return None if self.older_than_days is None else dt.timedelta(days=self.older_than_days)


def pending_request(request_id: str) -> dict[str, RequestInfoEvent]:
    """A checkpoint's ``pending_request_info_events`` with one question waiting."""
    return {
        request_id: RequestInfoEvent(
            "request_info",
            data="approve?",
            request_id=request_id,
            source_executor_id="gate",
            request_type=str,
            response_type=bool,
        )
    }


def _run(run: str, *ages: float) -> tuple[Saved, ...]:
    return tuple(Saved(f"{run}{i}", run, age) for i, age in enumerate(ages))


SCENARIOS = (
    RetentionScenario(
        "keep-last-counts-per-run",
        _run("a", 5, 4, 3, 2, 1) + _run("b", 5, 4),
        frozenset({"a3", "a4", "b0", "b1"}),
        keep_last=2,
    ),
    RetentionScenario(
        "older-than-deletes-only-old-ones",
        _run("a", 30, 10, 8, 6, 1),
        frozenset({"a3", "a4"}),
        older_than_days=7,
    ),
    RetentionScenario(
        "both-rules-must-let-go",
        _run("a", 30, 20, 10, 2, 1),
        frozenset({"a2", "a3", "a4"}),
        keep_last=2,
        older_than_days=15,
    ),
    RetentionScenario(
        "newest-of-each-run-stays",
        _run("a", 400) + _run("b", 300, 200),
        frozenset({"a0", "b1"}),
        older_than_days=1,
    ),
    RetentionScenario(
        "pending-requests-stay",
        (Saved("a0", "a", 60), Saved("a1", "a", 50, pending=True), Saved("a2", "a", 40)),
        frozenset({"a1", "a2"}),
        keep_last=1,
        older_than_days=1,
    ),
    RetentionScenario(
        "fork-origin-stays",
        _run("a", 60, 50, 40, 30) + (Saved("f0", "f", 20, forked_from="a1"), Saved("f1", "f", 10)),
        frozenset({"a1", "a3", "f1"}),
        keep_last=1,
    ),
    RetentionScenario(
        "timestamps-without-an-offset-are-utc",
        (Saved("a0", "a", 30, naive=True), Saved("a1", "a", 1, naive=True), Saved("a2", "a", 0)),
        frozenset({"a1", "a2"}),
        older_than_days=2,
    ),
    RetentionScenario(
        "ties-for-newest-all-stay",
        _run("a", 30, 5, 5),
        frozenset({"a1", "a2"}),
        keep_last=1,
    ),
    RetentionScenario(
        "ties-at-the-keep-last-boundary-all-stay",
        _run("a", 30, 20, 10, 10, 1),
        frozenset({"a2", "a3", "a4"}),
        keep_last=2,
    ),
)


class RetentionBinding(Protocol):
    def survivors(self, scenario: RetentionScenario) -> frozenset[str]:
        """Save the scenario's checkpoints, prune with its rules, return the ids left."""
        ...


class EngineRetention:
    """The engine's ``prune`` over a fresh storage from ``make_storage`` for each scenario."""

    def __init__(self, make_storage: Callable[[], CheckpointStorage]) -> None:
        self.make_storage = make_storage

    def survivors(self, scenario: RetentionScenario) -> frozenset[str]:
        async def apply() -> frozenset[str]:
            storage = self.make_storage()
            for checkpoint in scenario.checkpoints(dt.datetime.now(dt.UTC)):
                await storage.save(checkpoint)
            await prune(storage, keep_last=scenario.keep_last, older_than=scenario.older_than)
            return frozenset(await storage.list_checkpoint_ids())

        return asyncio.run(apply())


class RetentionContract:
    """The scenarios, bound to the ``retention`` fixture a subclass provides."""

    @pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
    def test_pruning_leaves_what_the_rules_keep(
        self, retention: RetentionBinding, scenario: RetentionScenario
    ) -> None:
        assert retention.survivors(scenario) == scenario.survivors
