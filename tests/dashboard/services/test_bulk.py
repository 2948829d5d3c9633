"""Actions on many runs at once: the preview says how many change and which are skipped and
why; the work goes run by run through the single-run services (each audited), survives a
worker that stopped half-way, and never acts on a run the user may not act on."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import (
    AuditEntry,
    BulkAction,
    BulkActionItem,
    RunStatus,
    WorkflowGrant,
    WorkflowRun,
)
from dashboard.services import bulk, dispatch

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ops(role_user: Callable[..., Any]) -> Any:
    return role_user("ops", "Operator")


@pytest.fixture
def mixed(make_run: Callable[..., WorkflowRun]) -> dict[str, list[WorkflowRun]]:
    return {
        "waiting": [make_run(status="waiting") for _ in range(3)],
        "completed": [make_run(status="completed") for _ in range(2)],
        "failed": [make_run(status="failed")],
    }


def ids(runs: list[WorkflowRun]) -> list[str]:
    return [str(r.pk) for r in runs]


def every(mixed: dict[str, list[WorkflowRun]]) -> list[WorkflowRun]:
    return [run for group in mixed.values() for run in group]


def test_the_preview_counts_what_changes_and_says_why_the_rest_is_skipped(
    ops: Any, mixed: dict[str, list[WorkflowRun]]
) -> None:
    preview = bulk.bulk_preview("cancel", ids(every(mixed)), user=ops)

    assert (preview.total, preview.acting) == (6, 3)
    assert [(why, n) for why, n, _ in preview.skips] == [
        ("already completed", 2),
        ("already failed", 1),
    ]
    assert set(preview.skips[0][2]) == set(ids(mixed["completed"]))


def test_a_bulk_cancel_goes_run_by_run_and_is_audited_for_each(
    ops: Any, mixed: dict[str, list[WorkflowRun]]
) -> None:
    action = bulk.bulk_start(
        "cancel", ids(every(mixed)), user=ops, reason="bad deploy", described="6 picked runs"
    )
    assert embedded.wait_for_background_tasks(60)

    action.refresh_from_db()
    assert (action.status, action.total, action.done, action.skipped) == ("finished", 6, 3, 3)
    assert all(
        WorkflowRun.objects.get(pk=r.pk).status == RunStatus.CANCELLED for r in mixed["waiting"]
    )
    assert (
        AuditEntry.objects.filter(
            action="cancel", actor=ops, details={"reason": "bad deploy"}
        ).count()
        == 3
    )
    assert AuditEntry.objects.filter(action="bulk_cancel", actor=ops).count() == 1
    skipped = dict(
        BulkActionItem.objects.filter(bulk=action, outcome="skipped").values_list(
            "run_id", "message"
        )
    )
    assert skipped[mixed["completed"][0].pk] == "already completed"


def test_a_run_that_moved_on_meanwhile_is_skipped_with_the_reason(
    ops: Any, mixed: dict[str, list[WorkflowRun]]
) -> None:
    target = mixed["waiting"][0]
    # Someone was quicker, before the worker got there.
    services.run_cancel(target.pk, user=ops, reason="a duplicate")
    action = bulk.bulk_start("cancel", [str(target.pk)], user=ops, reason="duplicates")
    assert embedded.wait_for_background_tasks(60)

    action.refresh_from_db()
    assert (action.done, action.skipped) == (0, 1)
    assert BulkActionItem.objects.get(bulk=action).message == "already cancelled"


def test_work_left_by_a_stopped_worker_is_carried_on_and_nothing_is_done_twice(
    role_user: Callable[..., Any], make_run: Callable[..., WorkflowRun]
) -> None:
    ops = role_user("adm", "Admin")  # holds are for those who manage retention
    picked = [make_run(status="waiting") for _ in range(bulk.CHUNK + 5)]
    # The worker that did the first chunk died; its claim has expired.
    action = BulkAction.objects.create(
        action="hold",
        total=len(picked),
        requested_by=ops,
        status="running",
        claim_token="dead",
        claimed_until=timezone.now(),
    )
    BulkActionItem.objects.bulk_create(
        BulkActionItem(bulk=action, position=n, run_id=r.pk, workflow_name=r.workflow_name)
        for n, r in enumerate(picked)
    )
    # The first chunk was done before the worker died: its outcomes are recorded.
    for run in picked[: bulk.CHUNK]:
        services.run_hold(run.pk, user=ops, hold=True)
    BulkActionItem.objects.filter(bulk=action, position__lt=bulk.CHUNK).update(
        outcome="done", message="put on hold"
    )
    BulkAction.objects.filter(pk=action.pk).update(done=bulk.CHUNK)

    finished = bulk.bulk_execute(str(action.pk))
    again = bulk.bulk_execute(str(action.pk))  # the same task delivered twice

    assert finished is not None and (finished.done, finished.skipped, finished.status) == (
        len(picked),
        0,
        "finished",
    )
    assert again is not None and again.done == len(picked)
    assert all(WorkflowRun.objects.get(pk=r.pk).on_hold for r in picked)
    assert AuditEntry.objects.filter(action="hold").count() == len(picked)


def test_a_second_delivery_while_the_first_works_leaves_it_alone(
    ops: Any, mixed: dict[str, list[WorkflowRun]]
) -> None:
    action = BulkAction.objects.create(
        action="cancel",
        total=1,
        requested_by=ops,
        status="running",
        claim_token="alive",
        claimed_until=timezone.now() + dt.timedelta(minutes=1),
    )
    BulkActionItem.objects.create(bulk=action, position=0, run_id=mixed["waiting"][0].pk)

    bulk.bulk_execute(str(action.pk))

    assert BulkActionItem.objects.get(bulk=action).outcome == ""
    assert WorkflowRun.objects.get(pk=mixed["waiting"][0].pk).status == RunStatus.WAITING


def test_a_role_for_some_workflows_acts_on_those_and_never_sees_the_others(
    role_user: Callable[..., Any], make_run: Callable[..., WorkflowRun]
) -> None:
    scoped = role_user("scoped")
    WorkflowGrant.objects.create(
        user=scoped, role=role_user.group("Operator"), workflow_name="squares"
    )  # type: ignore[attr-defined]
    WorkflowGrant.objects.create(
        user=scoped, role=role_user.group("Viewer"), workflow_name="fail-at-step"
    )  # type: ignore[attr-defined]
    mine = make_run(status="waiting", workflow_name="squares")
    viewed = make_run(status="waiting", workflow_name="fail-at-step")
    hidden = make_run(status="waiting", workflow_name="return-replace")

    preview = bulk.bulk_preview(
        "cancel", [str(mine.pk), str(viewed.pk), str(hidden.pk)], user=scoped
    )
    action = bulk.bulk_start(
        "cancel", [str(mine.pk), str(viewed.pk), str(hidden.pk)], user=scoped, reason="cleanup"
    )
    assert embedded.wait_for_background_tasks(60)

    assert (preview.total, preview.acting) == (2, 1)  # the hidden run is not even counted
    assert preview.skips[0][0] == "your role may not cancel runs of fail-at-step"
    action.refresh_from_db()
    assert (action.total, action.done, action.skipped) == (2, 1, 1)
    assert WorkflowRun.objects.get(pk=hidden.pk).status == RunStatus.WAITING
    assert WorkflowRun.objects.get(pk=viewed.pk).status == RunStatus.WAITING


@pytest.mark.parametrize(
    ("action", "runs", "says"),
    [
        ("explode", ["00000000-0000-4000-8000-000000000001"], "unknown action"),
        ("cancel", [], "pick the runs"),
        ("cancel", ["not-a-uuid"], "is not a run id"),
        ("cancel", ["\ud800"], "is not a run id"),
    ],
)
def test_bad_requests_are_refused_with_a_message_and_nothing_is_recorded(
    ops: Any, action: str, runs: list[str], says: str
) -> None:
    with pytest.raises(services.InvalidInput, match=says):
        bulk.bulk_start(action, runs, user=ops)
    assert not BulkAction.objects.exists()


def test_too_many_runs_at_once_is_refused(ops: Any) -> None:
    too_many = [f"00000000-0000-4000-8000-{n:012d}" for n in range(bulk.MAX_BULK_RUNS + 1)]
    with pytest.raises(services.InvalidInput, match="at most 10000 runs"):
        bulk.bulk_preview("cancel", too_many, user=ops)


def test_a_viewer_may_not_start_one(
    role_user: Callable[..., Any], mixed: dict[str, list[WorkflowRun]]
) -> None:
    viewer = role_user("vera", "Viewer")
    with pytest.raises(services.Forbidden):
        bulk.bulk_start("cancel", ids(mixed["waiting"]), user=viewer)
    assert AuditEntry.objects.filter(actor=viewer, outcome=AuditEntry.DENIED).exists()


def test_a_small_cancel_takes_effect_at_once_without_waiting_for_a_worker(
    ops: Any, mixed: dict[str, list[WorkflowRun]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every worker is busy (with the very runs to cancel, say): the queued task never starts.
    queued: list[str] = []
    monkeypatch.setattr(dispatch, "_bulk_executor", queued.append)
    targets = mixed["waiting"][:2]

    action = bulk.bulk_start("cancel", ids(targets), user=ops, reason="duplicates")

    action.refresh_from_db()
    assert (action.status, action.done, action.skipped) == ("finished", 2, 0)
    assert {WorkflowRun.objects.get(pk=r.pk).status for r in targets} == {RunStatus.CANCELLED}
    assert queued == [str(action.pk)]  # still queued, to carry on should this stop half-way
    assert bulk.bulk_execute(queued[0]) is not None  # and it finds nothing left to do
    action.refresh_from_db()
    assert action.done == 2


def test_a_cancel_that_fails_half_way_leaves_the_rest_to_the_queued_task(
    ops: Any, mixed: dict[str, list[WorkflowRun]], monkeypatch: pytest.MonkeyPatch
) -> None:
    queued: list[str] = []
    monkeypatch.setattr(dispatch, "_bulk_executor", queued.append)
    real_cancel = bulk.runs.run_cancel

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(bulk.runs, "run_cancel", broken)
    action = bulk.bulk_start("cancel", ids(mixed["waiting"]), user=ops, reason="duplicates")
    monkeypatch.setattr(bulk.runs, "run_cancel", real_cancel)

    bulk.bulk_execute(queued[0])  # the worker's task, once one is free

    action.refresh_from_db()
    assert (action.status, action.done) == ("finished", 3)


class WorkerDied(BaseException):
    """A worker killed between acting on a run and recording it (nothing catches it)."""


def test_a_run_is_recorded_in_the_transaction_that_acts_on_it_so_a_takeover_acts_once(
    role_user: Callable[..., Any],
    make_run: Callable[..., WorkflowRun],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admin = role_user("adm", "Admin")  # holds are for those who manage retention
    picked = [make_run(status="waiting") for _ in range(4)]
    monkeypatch.setattr(dispatch, "_bulk_executor", lambda bulk_id: None)
    action = bulk.bulk_start("hold", ids(picked), user=admin, reason="audit")
    real_one = bulk._one
    acted: list[str] = []

    def dies_after_the_third(*args: Any) -> tuple[str, str]:
        result = real_one(*args)
        acted.append(result[0])
        if len(acted) == 3:
            raise WorkerDied  # the run is on hold, its item not yet recorded
        return result

    monkeypatch.setattr(bulk, "_one", dies_after_the_third)
    with pytest.raises(WorkerDied):
        bulk.bulk_execute(str(action.pk))
    monkeypatch.setattr(bulk, "_one", real_one)
    BulkAction.objects.filter(pk=action.pk).update(claimed_until=timezone.now())  # expired

    finished = bulk.bulk_execute(str(action.pk))  # the worker that takes over

    assert finished is not None
    assert (finished.status, finished.done, finished.skipped) == ("finished", 4, 0)
    assert set(BulkActionItem.objects.filter(bulk=action).values_list("outcome", "message")) == {
        ("done", "put on hold")
    }
    assert AuditEntry.objects.filter(action="hold", details={"reason": "audit"}).count() == 4


def test_the_sweep_queues_again_the_actions_nobody_works_on(
    ops: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued: list[str] = []
    monkeypatch.setattr(dispatch, "_bulk_executor", queued.append)
    moment = timezone.now()
    lease = dt.timedelta(seconds=bulk._claim_seconds())

    def action(**fields: Any) -> str:
        return str(BulkAction.objects.create(action="cancel", requested_by=ops, **fields).pk)

    dead = action(status="running", claim_token="dead", claimed_until=moment - lease)
    lost = action(created_at=moment - 3 * lease)  # its message went with the broker
    action(status="running", claim_token="alive", claimed_until=moment + lease)
    action()  # just asked: its message is on the way
    action(status="finished", created_at=moment - 3 * lease)

    assert sorted(bulk.bulk_sweep()) == sorted(queued) == sorted([dead, lost])
