"""Two runs side by side: a fork against its origin, runs named by id or prefix, hidden and
unknown runs not found, the side-by-side view of one changed value."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client

from dashboard import services
from dashboard.execution import embedded
from dashboard.models import Checkpoint, WorkflowGrant, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pair(
    operator_approver_client: Client, drive: Callable[..., WorkflowRun]
) -> tuple[WorkflowRun, WorkflowRun]:
    """A return-replace run at its gate, and a fork of it with the order's state edited."""
    origin = drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-C", "work_ms": 0},
        user=operator_approver_client.user,
    )  # type: ignore[attr-defined]
    gate = Checkpoint.objects.filter(run=origin).order_by("-superstep").first()
    assert gate is not None
    fork = services.run_fork(
        origin.pk,
        checkpoint_id=gate.checkpoint_id,
        user=operator_approver_client.user,  # type: ignore[attr-defined]
        reason="compare me",
    )
    assert embedded.wait_for_background_tasks(60)
    return origin, WorkflowRun.objects.get(pk=fork.pk)


def test_a_fork_against_its_origin(
    operator_approver_client: Client, pair: tuple[WorkflowRun, WorkflowRun]
) -> None:
    origin, fork = pair
    page = operator_approver_client.get(
        "/runs/compare/", {"a": str(origin.pk), "b": str(fork.pk)[:8]}
    )

    assert page.status_code == 200
    html = page.content.decode()
    assert "Run B is a fork of run A." in html
    comparison = page.context["comparison"]
    assert comparison.a == origin and comparison.b == fork
    assert [f.label for f in comparison.facts][:3] == ["Workflow", "Status", "Version"]
    assert not comparison.input.entries  # a fork starts with its origin's input
    assert comparison.checkpoints is not None
    assert ("hitl-gate", 1, 0) in comparison.executors or any(
        name == "hitl-gate" for name, *_ in comparison.executors
    )
    assert "$t" not in html and "$keys" not in html


def test_one_run_asks_for_the_other_and_offers_its_relatives(
    operator_approver_client: Client, pair: tuple[WorkflowRun, WorkflowRun]
) -> None:
    origin, fork = pair
    page = operator_approver_client.get("/runs/compare/", {"a": str(origin.pk)})

    assert page.status_code == 200
    assert fork in page.context["choices"]
    assert f"?a={origin.pk}&amp;b={fork.pk}" in page.content.decode()


def test_a_changed_value_opens_side_by_side(
    operator_approver_client: Client, pair: tuple[WorkflowRun, WorkflowRun]
) -> None:
    origin, fork = pair
    page = operator_approver_client.get("/runs/compare/", {"a": str(origin.pk), "b": str(fork.pk)})
    diff = page.context["comparison"].checkpoints
    if not diff.entries:
        pytest.skip(
            "the two latest checkpoints are equal"
        )  # pragma: no cover - the fork has moved on
    number = diff.entries[0].number
    side = operator_approver_client.get(
        "/runs/compare/",
        {"a": str(origin.pk), "b": str(fork.pk), "side": number},
        headers={"HX-Request": "true", "HX-Target": f"diff-side-{number}"},
    )
    assert side.status_code == 200 and f'id="diff-side-{number}"' in side.content.decode()


@pytest.mark.parametrize(
    "b", ["zzzz", "0000", "%ED%A0%80", "x" * 500, "00000000-0000-4000-8000-000000000009"]
)
def test_unknown_or_malformed_runs_are_named_and_404(
    operator_approver_client: Client, pair: tuple[WorkflowRun, WorkflowRun], b: str
) -> None:
    origin, _ = pair
    page = operator_approver_client.get(f"/runs/compare/?a={origin.pk}&b={b}")

    assert page.status_code == 404
    assert 'id="compare-b-error"' in page.content.decode()


def test_a_run_of_a_workflow_one_may_not_see_is_not_found(
    role_user: Callable[..., object], pair: tuple[WorkflowRun, WorkflowRun]
) -> None:
    origin, fork = pair
    squares_only = role_user("sq")  # type: ignore[operator]
    WorkflowGrant.objects.create(
        user=squares_only, role=role_user.group("Viewer"), workflow_name="squares"
    )  # type: ignore[attr-defined]
    client = Client()
    client.force_login(squares_only)

    page = client.get("/runs/compare/", {"a": str(origin.pk), "b": str(fork.pk)})

    assert page.status_code == 404 and "comparison" not in page.context
