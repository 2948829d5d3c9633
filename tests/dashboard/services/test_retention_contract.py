"""The retention contract on the database: the dashboard's retention policies must leave, on
SQLite and PostgreSQL, the checkpoints the engine's ``prune`` leaves on the in-memory and the
file storage (``tests/workflows/test_retention.py`` binds those) in the same scenarios.

On the database each lineage of a scenario is a completed run whose checkpoints are written
through the one write path (``save_split``), a fork is a child run started from its origin, and
the scenario's rules are a retention policy applied through ``checkpoint_prune``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from dashboard import services
from dashboard.checkpoints.writes import save_split
from dashboard.models import Checkpoint, RetentionPolicy, RunStatus, WorkflowRun
from dashboard.services import retention
from workflows.storage import split_checkpoint
from workflows.testing_retention import (
    SCENARIOS,
    RetentionContract,
    RetentionScenario,
)


class DatabaseRetention:
    """A scenario as completed runs in the database, pruned by a retention policy."""

    def survivors(self, scenario: RetentionScenario) -> frozenset[str]:
        self.populate(scenario)
        policy = RetentionPolicy.objects.create(
            name="contract",
            status=RunStatus.COMPLETED,
            keep_last_checkpoints=scenario.keep_last,
            delete_checkpoints_older_than_days=scenario.older_than_days,
        )
        services.checkpoint_prune(policy=policy)
        return frozenset(Checkpoint.objects.values_list("pk", flat=True))

    def populate(self, scenario: RetentionScenario) -> dict[str, WorkflowRun]:
        """The scenario's runs (by lineage) and checkpoints, as a worker would have left them."""
        runs: dict[str, WorkflowRun] = {}
        newest: dict[str, tuple[str, str]] = {}  # run -> (timestamp, id) of its newest
        for checkpoint in scenario.checkpoints(timezone.now()):
            run = runs.get(checkpoint.run_id) or self._run(checkpoint.run_id, runs, scenario)
            save_split(split_checkpoint(checkpoint), run_id=run.pk)
            stamp = (checkpoint.timestamp, checkpoint.checkpoint_id)
            if checkpoint.run_id not in newest or stamp[0] >= newest[checkpoint.run_id][0]:
                newest[checkpoint.run_id] = stamp
        for lineage, run in runs.items():
            run.latest_checkpoint_id = newest[lineage][1]
            run.save(update_fields=["latest_checkpoint"])
        return runs

    @staticmethod
    def _run(
        lineage: str, runs: dict[str, WorkflowRun], scenario: RetentionScenario
    ) -> WorkflowRun:
        first = next(s for s in scenario.saved if s.run == lineage)
        parent = None
        if first.forked_from is not None:
            parent = runs[next(s.run for s in scenario.saved if s.id == first.forked_from)]
        runs[lineage] = WorkflowRun.objects.create(
            workflow_name="retention-contract",
            status=RunStatus.COMPLETED,
            finished_at=timezone.now() - dt.timedelta(days=first.age_days),
            engine_run_id=lineage,
            parent_run=parent,
            origin_checkpoint_id=first.forked_from,
        )
        return runs[lineage]


class TestDatabaseRetentionKeepsTheRetentionContract(RetentionContract):
    @pytest.fixture
    def retention(self, services_db: str) -> DatabaseRetention:
        return DatabaseRetention()


def test_a_fork_made_after_the_batch_was_planned_keeps_its_origin(
    services_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Forking does not change the parent's status, so only deciding again under the run lock
    # sees it: the batch was planned when nothing had started from a1 yet.
    (scenario,) = (s for s in SCENARIOS if s.name == "keep-last-counts-per-run")
    runs = DatabaseRetention().populate(scenario)
    planned = retention._apply

    def fork_then_apply(batch: list[Any], *args: Any) -> None:
        assert "a1" in {row[0] for row in batch}  # (checkpoint id, run, ...)
        WorkflowRun.objects.create(
            workflow_name="retention-contract",
            engine_run_id="fork",
            parent_run=runs["a"],
            origin_checkpoint_id="a1",
        )
        planned(batch, *args)

    monkeypatch.setattr(retention, "_apply", fork_then_apply)
    policy = RetentionPolicy.objects.create(
        name="keep-one", status=RunStatus.COMPLETED, keep_last_checkpoints=1
    )

    (report,) = services.checkpoint_prune(policy=policy)

    assert set(Checkpoint.objects.filter(run=runs["a"]).values_list("pk", flat=True)) == {
        "a1",
        "a4",
    }
    assert report.checkpoints == 4  # a0, a2, a3 of run a and b0 of run b
