"""Functional workflows (``@workflow`` / ``@step``) on the dashboard, with the ``order-pipeline``
demo: started from its input type, its request reaches the inbox, the decision resumes it, and
its run page lists its steps in call order, replayed or computed, instead of a graph.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from dashboard import selectors, services
from dashboard.core.errors import Conflict, InvalidInput
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RetentionPolicy,
    RunStatus,
    WorkflowRun,
)
from dashboard.web.run_page.steps import duration_text
from tests.dashboard.observability.test_metrics import TOKEN as METRICS_TOKEN
from tests.dashboard.observability.test_metrics import scrape, value

Drive = Callable[..., WorkflowRun]
ORDER = {"customer": "Ada", "quantity": 3, "unit_price": 45.0, "work_ms": 0}
STEP = re.compile(r'data-step="([^"]+)" data-step-status="(\w+)"')

pytestmark = pytest.mark.django_db(transaction=True)


def start_order(drive: Drive, user: Any, **data: Any) -> WorkflowRun:
    return drive(
        services.run_start, workflow_name="order-pipeline", input={**ORDER, **data}, user=user
    )


def approve(drive: Drive, run: WorkflowRun, user: Any) -> WorkflowRun:
    (request,) = ApprovalRequest.objects.filter(run=run, status=ApprovalStatus.PENDING)
    return drive(
        services.approval_decide,
        request.request_id,
        user=user,
        approved=True,
        response={"approved": True, "note": "fine"},
        reason="known customer",
    )


def test_a_large_order_waits_in_the_inbox_and_the_decision_completes_it(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    user = role_user("olga", "Operator", "Approver")
    run = start_order(drive, user)
    assert run.status == RunStatus.WAITING, run.traceback
    (request,) = ApprovalRequest.objects.filter(run=run, status=ApprovalStatus.PENDING)
    assert request.request_data["v"]["question"] == "Approve Ada's order of 135.00?"

    done = approve(drive, run, user)

    assert done.status == RunStatus.COMPLETED, done.traceback
    assert done.output["status"] == "shipped"


def test_a_small_order_needs_no_approval(drive: Drive, role_user: Callable[..., Any]) -> None:
    run = start_order(drive, role_user("olga", "Operator"), quantity=1)

    assert run.status == RunStatus.COMPLETED, run.traceback
    assert not ApprovalRequest.objects.filter(run=run).exists()


def test_the_run_page_lists_the_steps_replayed_and_computed(
    drive: Drive, role_user: Callable[..., Any], client: Any
) -> None:
    user = role_user("olga", "Operator", "Approver")
    run = start_order(drive, user)
    client.force_login(user)
    waiting = client.get(reverse("dashboard:run_detail", args=[run.pk])).content.decode()
    approve(drive, run, user)

    html = client.get(reverse("dashboard:run_detail", args=[run.pk])).content.decode()

    # No graph: the steps in call order; the one done before the pause is replayed on resume.
    assert "Workflow graph" not in html
    assert STEP.findall(waiting) == [("price_order", "computed")]
    assert STEP.findall(html) == [
        ("price_order", "replayed"),
        ("reserve_stock", "computed"),
        ("pack_order", "computed"),
        ("ship_order", "computed"),
    ]
    assert "parcel for res-lamp-42-3" in html  # a result
    assert "lamp-42" in html and "1 replayed from a checkpoint" in html
    # Each step's input and result in a tree of its own.
    assert 'id="step-3-input"' in html and 'id="step-3-result"' in html


def after_step(run: WorkflowRun, name: str) -> Checkpoint:
    """The checkpoint written when step ``name`` returned."""
    for checkpoint in Checkpoint.objects.filter(run=run).order_by("created_at"):
        steps = selectors.checkpoint_steps(checkpoint)
        if checkpoint.document["metadata"].get("kind") == "step" and steps[-1].step == name:
            return checkpoint
    raise AssertionError(f"no checkpoint after {name}")


def test_a_fork_from_after_a_step_replays_the_steps_before_it(
    drive: Drive, role_user: Callable[..., Any], client: Any
) -> None:
    user = role_user("olga", "Operator", "Approver")
    run = start_order(drive, user, quantity=1)
    checkpoint = after_step(run, "reserve_stock")

    fork = drive(
        services.run_fork, run.pk, checkpoint_id=checkpoint.checkpoint_id, user=user, reason="again"
    )

    assert fork.pk != run.pk and fork.status == RunStatus.COMPLETED, fork.traceback
    assert fork.output == run.output
    steps = selectors.checkpoint_steps(fork.latest_checkpoint)
    assert [(s.step, s.status) for s in steps] == [
        ("price_order", "replayed"),
        ("reserve_stock", "replayed"),
        ("pack_order", "computed"),
        ("ship_order", "computed"),
    ]
    # The checkpoint page of a step checkpoint reads like any other.
    client.force_login(user)
    page = client.get(
        reverse("dashboard:checkpoint_detail", args=[run.pk, checkpoint.checkpoint_id])
    )
    assert page.status_code == 200 and "reserve_stock" in page.content.decode()


def test_a_resume_from_after_a_step_runs_the_rest_again(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    user = role_user("olga", "Operator")
    run = start_order(drive, user, quantity=1)
    checkpoint = after_step(run, "pack_order")

    resumed = drive(
        services.run_resume,
        run.pk,
        checkpoint_id=checkpoint.checkpoint_id,
        user=user,
        reason="ship it again",
    )

    assert resumed.status == RunStatus.COMPLETED, resumed.traceback
    steps = selectors.checkpoint_steps(resumed.latest_checkpoint)
    assert [s.status for s in steps] == ["replayed", "replayed", "replayed", "computed"]
    assert resumed.output["status"] == "shipped"


def test_pruning_keeps_what_the_latest_checkpoint_reads(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    """Pruning a functional run's earlier step checkpoints (whose state values are stored once
    and shared) leaves the latest one whole: its steps readable, and forkable."""
    user = role_user("olga", "Operator")
    run = start_order(drive, user, quantity=1)
    before = [
        (s.step, s.status, s.result) for s in selectors.checkpoint_steps(run.latest_checkpoint)
    ]
    written = Checkpoint.objects.filter(run=run).count()
    RetentionPolicy.objects.create(name="short", status="completed", keep_last_checkpoints=1)

    (report,) = services.checkpoint_prune()

    assert written > 4 and report.checkpoints == written - 1
    (kept,) = Checkpoint.objects.filter(run=run)
    assert kept.pk == run.latest_checkpoint_id
    after = [(s.step, s.status, s.result) for s in selectors.checkpoint_steps(kept)]
    assert after == before and len(after) == 4
    fork = drive(
        services.run_fork, run.pk, checkpoint_id=kept.checkpoint_id, user=user, reason="again"
    )
    assert fork.status == RunStatus.COMPLETED, fork.traceback


def test_metrics_count_a_functional_run_its_checkpoints_and_its_approval(
    drive: Drive, role_user: Callable[..., Any], settings: Any
) -> None:
    settings.SUPERSTEP_METRICS_TOKEN = METRICS_TOKEN
    name = {"workflow": "order-pipeline"}
    before = scrape()
    user = role_user("olga", "Operator", "Approver")

    run = approve(drive, start_order(drive, user), user)

    after = scrape()
    assert run.status == RunStatus.COMPLETED
    assert value(after, "superstep_runs", status="completed", **name) == 1
    written = Checkpoint.objects.filter(run=run).count()
    grown = value(after, "superstep_checkpoint_size_bytes_count", **name) - value(
        before, "superstep_checkpoint_size_bytes_count", **name
    )
    assert grown == written
    decided = {"decision": "approved", **name}
    assert (
        value(after, "superstep_approval_wait_seconds_count", **decided)
        - value(before, "superstep_approval_wait_seconds_count", **decided)
        == 1
    )


@pytest.mark.parametrize(
    ("ms", "text"),
    [(None, ""), (0.4, "0 ms"), (820.0, "820 ms"), (1500.0, "1.50 s"), (125_000.0, "2 min 05 s")],
)
def test_a_step_duration_reads_in_milliseconds_seconds_then_minutes(
    ms: float | None, text: str
) -> None:
    assert duration_text(ms) == text


def test_the_run_page_of_a_functional_run_hides_the_superstep_timeline(
    drive: Drive, role_user: Callable[..., Any], client: Any
) -> None:
    user = role_user("olga", "Operator")
    run = start_order(drive, user, quantity=1)
    client.force_login(user)

    html = client.get(reverse("dashboard:run_detail", args=[run.pk])).content.decode()

    assert '<section id="run-gantt" class="card" aria-labelledby="gantt-title" hidden>' in html


def test_manage_workflows_lists_it_with_its_input_type() -> None:
    out = io.StringIO()

    call_command("workflows", "--json", stdout=out)

    (listed,) = [
        w for w in json.loads(out.getvalue())["workflows"] if w["name"] == "order-pipeline"
    ]
    assert listed["error"] is None and listed["input_type"] == "OrderRequest"
    assert set(listed["input_schema"]["properties"]) >= {"customer", "quantity", "work_ms"}
    assert listed["requests"] == []  # named where request_info is called, not in advance


def test_the_start_form_asks_for_its_input_type(client: Any, role_user: Callable[..., Any]) -> None:
    client.force_login(role_user("olga", "Operator"))

    html = client.get("/runs/start/?workflow=order-pipeline").content.decode()

    for field in ("customer", "sku", "quantity", "unit_price", "approval_limit", "work_ms"):
        assert f'id="id_input-{field}"' in html


def test_the_api_describes_it_by_its_steps(client: Any, role_user: Callable[..., Any]) -> None:
    client.force_login(role_user("olga", "Operator"))

    (listed,) = [
        w
        for w in client.get("/api/workflows/").json()["workflows"]
        if w["name"] == "order-pipeline"
    ]

    assert listed["graph"] == {
        "kind": "functional",
        "name": "order-pipeline",
        "steps": ["pack_order", "price_order", "reserve_stock", "ship_order"],
    }
    assert "customer" in listed["input_schema"]["properties"]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"executor_states": {"price_order": {}}}, "a functional workflow has no executor states"),
        ({"messages": []}, "a functional workflow has no messages"),
    ],
)
def test_a_fork_refuses_edits_of_executors_or_messages_it_does_not_have(
    drive: Drive, role_user: Callable[..., Any], edit: dict[str, Any], said: str
) -> None:
    user = role_user("olga", "Operator")
    run = start_order(drive, user, quantity=1)
    checkpoint = after_step(run, "price_order")

    with pytest.raises(InvalidInput) as refused:
        services.run_fork(
            run.pk, checkpoint_id=checkpoint.checkpoint_id, user=user, reason="edit", **edit
        )

    assert said in refused.value.errors.values()


def test_a_run_whose_code_is_gone_is_parked_and_never_moved(
    drive: Drive, role_user: Callable[..., Any]
) -> None:
    """Deployed code changed under a waiting run: its saved results cannot be replayed by other
    code, so it needs migration (it is not moved, and nothing crashes)."""
    user = role_user("olga", "Operator", "Approver")
    run = start_order(drive, user)
    gone = "e" * 64
    checkpoint = run.latest_checkpoint
    checkpoint.document = {**checkpoint.document, "graph_signature_hash": gone}
    checkpoint.save(update_fields=["document"])
    WorkflowRun.objects.filter(pk=run.pk).update(graph_version=gone)
    run.refresh_from_db()

    state = services.version_state(run)

    assert not state.can_continue
    assert "only the code that computed them may replay" in state.reason
    with pytest.raises(Conflict, match="cannot move to another version"):
        services.run_migrate(run.pk, checkpoint_id=checkpoint.checkpoint_id, user=user)
