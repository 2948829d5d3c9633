"""Approval governance on the operator pages: the inbox's "Mine" / "My groups" / "All" tabs,
claim and release through the service (its refusals shown as they are), due times and the
overdue badge, and the audit card on a run's page."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from dashboard import services
from dashboard.models import ApprovalRequest, WorkflowRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def requests(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> list[ApprovalRequest]:
    """Three return-replace runs waiting at their gate, oldest first."""
    operator = client_as("Operator")
    for order in ("ORD-1", "ORD-2", "ORD-3"):
        drive(
            services.run_start,
            workflow_name="return-replace",
            input={"order_id": order, "work_ms": 0},
            user=operator.user,  # type: ignore[attr-defined]
        )
    return list(ApprovalRequest.objects.order_by("created_at"))


def listed(response: Any) -> list[str]:
    return [a.request_id for a in response.context["approvals"]]


def claim_url(approval: ApprovalRequest) -> str:
    return f"/approvals/{approval.request_id}/claim/"


# ----------------------------------------------------------------------------------- tabs


def test_tabs_filter_by_assignment_claim_and_group(
    client_as: Callable[..., Client],
    role_user: Callable[..., Any],
    requests: list[ApprovalRequest],
) -> None:
    ann = client_as("Approver", username="ann")
    other = role_user("bob", "Approver")
    team = role_user.group("Approver")  # type: ignore[attr-defined]
    first, second, third = requests
    ApprovalRequest.objects.filter(pk=first.pk).update(assigned_user=ann.user)  # type: ignore[attr-defined]
    ApprovalRequest.objects.filter(pk=second.pk).update(assigned_group=team, assigned_user=None)

    default = ann.get("/approvals/")
    assert default.context["inbox_tab"] == "all"
    assert listed(default) == [r.request_id for r in requests]

    mine = ann.get("/approvals/?tab=mine")
    assert listed(mine) == [first.request_id]
    html = mine.content.decode()
    assert 'href="/approvals/?tab=mine"' in html and 'aria-current="page">Mine</a>' in html
    # The filter form keeps the tab.
    assert '<input type="hidden" name="tab" value="mine">' in html

    groups = ann.get("/approvals/?tab=groups")
    assert listed(groups) == [second.request_id]
    assert "assigned to Approver" in groups.content.decode()

    # Claiming puts an unassigned request in "Mine"; another user's assignment stays his.
    services.approval_claim(third.request_id, user=ann.user)  # type: ignore[attr-defined]
    assert listed(ann.get("/approvals/?tab=mine")) == [first.request_id, third.request_id]
    ApprovalRequest.objects.filter(pk=first.pk).update(assigned_user=other)
    assert listed(ann.get("/approvals/?tab=mine")) == [third.request_id]
    refused = ann.post(claim_url(first))
    assert refused.status_code == 403
    assert "this request is assigned to another user" in refused.content.decode()

    # An unknown tab is "All".
    assert ann.get("/approvals/?tab=nope").context["inbox_tab"] == "all"


def test_operator_without_groups_assignment_sees_empty_tabs(
    client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    viewer = client_as("Viewer", username="vic")
    assert listed(viewer.get("/approvals/?tab=mine")) == []
    assert listed(viewer.get("/approvals/?tab=groups")) == []
    assert len(listed(viewer.get("/approvals/?tab=all"))) == 3
    # A viewer may read but not claim: no button.
    assert "/claim/" not in viewer.get("/approvals/").content.decode()


# ----------------------------------------------------------------------------- claiming


def test_claim_then_another_approver_sees_claimed_by_and_cannot_claim(
    client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    ann = client_as("Approver", username="ann")
    bob = client_as("Approver", username="bob")
    first = requests[0]

    page = ann.get(f"/approvals/?request={first.request_id}").content.decode()
    assert f'action="{claim_url(first)}"' in page and ">Claim</button>" in page
    assert 'name="csrfmiddlewaretoken"' in page

    response = ann.post(claim_url(first))
    assert response.status_code == 302
    assert response["Location"] == f"/approvals/?request={first.request_id}"
    first.refresh_from_db()
    assert first.claimed_by == ann.user  # type: ignore[attr-defined]

    mine = ann.get(f"/approvals/?request={first.request_id}").content.decode()
    assert "claimed by ann" in mine and ">Release</button>" in mine

    seen = bob.get(f"/approvals/?request={first.request_id}").content.decode()
    assert "claimed by ann" in seen
    assert ">Claim</button>" not in seen and ">Release</button>" not in seen

    # Bob posts anyway (a stale page): the service's 409 and its words, as they are.
    refused = bob.post(claim_url(first))
    assert refused.status_code == 409
    assert "is already claimed by ann" in refused.content.decode()
    assert 'id="decide-error"' in refused.content.decode()
    # Nor can he release Ann's claim.
    refused = bob.post(claim_url(first), {"release": "1"})
    assert refused.status_code == 409
    assert "is not claimed by you" in refused.content.decode()

    # Ann gives it back; it is nobody's again.
    assert ann.post(claim_url(first), {"release": "1"}).status_code == 302
    first.refresh_from_db()
    assert first.claimed_by is None
    assert (
        "claimed by ann" not in bob.get(f"/approvals/?request={first.request_id}").content.decode()
    )


def test_claim_refused_for_a_viewer_with_the_services_message(
    client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    viewer = client_as("Viewer", username="vic")
    response = viewer.post(claim_url(requests[0]))
    assert response.status_code == 403
    requests[0].refresh_from_db()
    assert requests[0].claimed_by is None


def test_claim_of_an_unknown_request_is_404_and_get_is_not_allowed(
    client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    ann = client_as("Approver", username="ann")
    assert ann.post("/approvals/nope/claim/").status_code == 404
    assert ann.get(claim_url(requests[0])).status_code == 405


def test_claim_needs_the_csrf_token(
    role_user: Callable[..., Any], requests: list[ApprovalRequest]
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(role_user("ann", "Approver"))
    assert client.post(claim_url(requests[0])).status_code == 403
    requests[0].refresh_from_db()
    assert requests[0].claimed_by is None


def test_due_time_and_overdue_badge(
    client_as: Callable[..., Client], requests: list[ApprovalRequest]
) -> None:
    ann = client_as("Approver", username="ann")
    first, second, _ = requests
    later = timezone.now() + dt.timedelta(hours=2)
    ApprovalRequest.objects.filter(pk=first.pk).update(due_at=later)
    ApprovalRequest.objects.filter(pk=second.pk).update(
        due_at=timezone.now() - dt.timedelta(minutes=5)
    )
    html = ann.get(f"/approvals/?request={second.request_id}").content.decode()
    assert html.count('class="badge badge-danger">overdue</span>') == 2  # list item and panel
    assert '<span class="muted">due ' in html
    # Said relatively in the list ("in 2 hours", kept current by app.js), exact on hover.
    assert f'title="{timezone.localtime(later):%Y-%m-%d %H:%M:%S %Z}"' in html


def test_names_are_escaped(
    client_as: Callable[..., Client],
    role_user: Callable[..., Any],
    requests: list[ApprovalRequest],
) -> None:
    ann = client_as("Approver", username="ann")
    evil = role_user("<b>x</b>", "Approver")
    services.approval_claim(requests[0].request_id, user=evil)
    html = ann.get("/approvals/").content.decode()
    assert "claimed by &lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html


# ---------------------------------------------------------------------------- audit card


def test_audit_card_shows_a_resume_with_its_checkpoints_newest_first(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    from dashboard.models import Checkpoint

    operator = client_as("Operator", username="olga")
    run = drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": "ORD-9", "work_ms": 0},
        user=operator.user,  # type: ignore[attr-defined]
    )
    before = run.latest_checkpoint_id
    origin = Checkpoint.objects.filter(run=run).order_by("superstep").first()
    assert origin is not None and before and origin.checkpoint_id != before
    drive(
        services.run_resume,
        run.pk,
        checkpoint_id=origin.checkpoint_id,
        user=operator.user,  # type: ignore[attr-defined]
        reason="ask again",
    )

    response = operator.get(f"/runs/{run.pk}/")
    entries = response.context["audit_entries"]
    assert [e.action for e in entries][:2] == ["resume", "start"]
    html = response.content.decode()
    assert 'id="run-audit"' in html
    card = html[html.index('id="run-audit"') :]
    assert "<strong>olga</strong>" in card and '<span class="mono">resume</span>' in card
    assert f"<code>{before}</code> → <code>{origin.checkpoint_id}</code>" in card
    assert card.index(">resume</span>") < card.index(">start</span>")  # newest first


def test_audit_card_is_capped_escaped_and_shows_refusals(
    client_as: Callable[..., Client], make_run: Callable[..., WorkflowRun]
) -> None:
    from dashboard.models import AuditEntry

    viewer = client_as("Viewer", username="vic")
    run = make_run(status="completed")
    other = make_run(status="completed")
    now = timezone.now()
    AuditEntry.objects.bulk_create(
        AuditEntry(
            run_id=run.pk,
            actor_name="ann",
            action="cancel",
            created_at=now - dt.timedelta(seconds=i),
            target=f"entry {i}",
        )
        for i in range(60)
    )
    AuditEntry.objects.create(
        run_id=run.pk,
        actor_name="<script>x</script>",
        action="retry",
        outcome="denied",
        created_at=now + dt.timedelta(seconds=1),
    )
    AuditEntry.objects.create(run_id=other.pk, actor_name="zed", action="fork")

    response = viewer.get(f"/runs/{run.pk}/")
    entries = response.context["audit_entries"]
    assert len(entries) == 50
    assert entries[0].action == "retry" and entries[-1].target == "entry 48"
    html = response.content.decode()
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>x</script>" not in html
    assert '<span class="badge badge-danger">denied</span>' in html
    assert "(the last 50)" in html and "zed" not in html


def test_audit_card_empty(
    client_as: Callable[..., Client], make_run: Callable[..., WorkflowRun]
) -> None:
    viewer = client_as("Viewer", username="vic")
    run = make_run(status="completed")
    html = viewer.get(f"/runs/{run.pk}/").content.decode()
    assert "No operator action recorded for this run yet." in html
