"""A resume or fork keeps the output the run had at its checkpoint (dashboard/services/runs.py,
``output_at``; ``run_finish``).

The rule: a run's output is the last one its lineage yielded, and an attempt that yields none
keeps it. Resuming or forking the checkpoint a run completed at runs nothing, so the run keeps
its output (from the run, or from the event log when the run has moved on to another branch);
resuming an earlier checkpoint runs the supersteps after it, whose output is the run's.

Runs execute in embedded mode: the real worker (``dashboard.execution.worker``) on the
embedded pool, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dashboard import services
from dashboard.execution import embedded, tasks
from dashboard.models import Checkpoint, RunEvent, RunStatus, WorkflowRun
from dashboard.services.runs import output_at
from workflows.storage import decode

WAIT = 30.0
SQUARES = {"limit": 3, "work_ms": 0}
SQUARED = {1: 1, 2: 4, 3: 9}


@pytest.fixture(autouse=True)
def database(services_transactional_db: str) -> str:
    return services_transactional_db


@pytest.fixture(autouse=True)
def drained() -> Iterator[None]:
    yield
    assert embedded.wait_for_background_tasks(WAIT), "background tasks still running"


def settled(run_id: Any) -> WorkflowRun:
    assert embedded.wait_for_background_tasks(WAIT), "runs did not finish in time"
    return WorkflowRun.objects.get(pk=run_id)


def completed_squares() -> WorkflowRun:
    run = services.run_start(workflow_name="squares", input=SQUARES)
    run = settled(run.pk)
    assert run.status == RunStatus.COMPLETED and decode(run.output) == SQUARED
    return run


def first_checkpoint(run: WorkflowRun) -> Checkpoint:
    found = Checkpoint.objects.filter(run=run).order_by("created_at").first()
    assert found is not None
    return found


def outputs_after(run: WorkflowRun, seq: int) -> int:
    return RunEvent.objects.filter(run=run, type="output", seq__gt=seq).count()


def test_run_resume_of_the_final_checkpoint_keeps_the_output() -> None:
    run = completed_squares()
    final = run.latest_checkpoint_id
    assert final is not None

    services.run_resume(run.pk, checkpoint_id=final)
    run = settled(run.pk)

    assert run.status == RunStatus.COMPLETED
    assert decode(run.output) == SQUARED


def test_run_fork_of_the_final_checkpoint_keeps_the_origins_output() -> None:
    origin = completed_squares()
    assert origin.latest_checkpoint_id is not None

    fork = services.run_fork(origin.pk, checkpoint_id=origin.latest_checkpoint_id)
    fork = settled(fork.pk)

    assert fork.status == RunStatus.COMPLETED
    assert decode(fork.output) == SQUARED
    assert decode(settled(origin.pk).output) == SQUARED


def test_run_resume_of_an_earlier_checkpoint_takes_the_output_its_supersteps_yield() -> None:
    run = completed_squares()
    first = first_checkpoint(run)
    mark = run.last_event_seq
    assert output_at(run, first) is None  # the supersteps after it yield it again

    services.run_resume(run.pk, checkpoint_id=first.checkpoint_id)
    run = settled(run.pk)

    assert run.status == RunStatus.COMPLETED and decode(run.output) == SQUARED
    assert outputs_after(run, mark) == 1  # yielded again by this branch


def test_run_resume_of_an_older_branchs_final_checkpoint_keeps_that_branchs_output() -> None:
    run = completed_squares()
    old_final = run.latest_checkpoint_id
    assert old_final is not None
    services.run_resume(run.pk, checkpoint_id=first_checkpoint(run).checkpoint_id)
    run = settled(run.pk)
    assert run.latest_checkpoint_id != old_final
    # The run output is gone from the row (a branch in flight), but the log still has it.
    WorkflowRun.objects.filter(pk=run.pk).update(output=None)

    services.run_resume(run.pk, checkpoint_id=old_final)
    run = settled(run.pk)

    assert run.status == RunStatus.COMPLETED
    assert decode(run.output) == SQUARED


def test_run_finish_without_an_output_keeps_the_runs_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tasks, "enqueue_on_commit", lambda *args, **kwargs: None)
    kept = services.run_start(workflow_name="squares", input=SQUARES)
    replaced = services.run_start(workflow_name="squares", input=SQUARES)
    WorkflowRun.objects.filter(pk__in=[kept.pk, replaced.pk]).update(output={"had": 1})

    for run, output in ((kept, None), (replaced, {"new": 2})):
        lease = services.lease_acquire(run.pk, "worker-a")
        assert lease is not None
        services.run_finish(lease, outcome=RunStatus.COMPLETED, events=[], output=output)

    assert WorkflowRun.objects.get(pk=kept.pk).output == {"had": 1}
    assert WorkflowRun.objects.get(pk=replaced.pk).output == {"new": 2}


def test_run_finish_keeps_what_a_run_yielded_before_it_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The steps after an answer may yield nothing more: the earlier output must not be lost.
    monkeypatch.setattr(tasks, "enqueue_on_commit", lambda *args, **kwargs: None)
    run = services.run_start(workflow_name="squares", input=SQUARES)
    lease = services.lease_acquire(run.pk, "worker-a")
    assert lease is not None
    services.run_finish(lease, outcome=RunStatus.WAITING, events=[], output={"so far": 1})

    run = WorkflowRun.objects.get(pk=run.pk)
    assert run.status == RunStatus.WAITING and run.output == {"so far": 1}
