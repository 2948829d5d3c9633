"""The retention page (dashboard/web/operations/retention.py): policies with their rules,
state, last run and live preview; the policy form with errors beside its fields and a preview
of the draft; run now; holds with who and when, put and released; admins only; 4xx, never 500,
for bad input; a fixed number of queries per page."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from dashboard import services
from dashboard.models import AuditEntry, Checkpoint, RetentionPolicy, RunStatus, WorkflowRun

pytestmark = pytest.mark.django_db
_ids = itertools.count(1)


def finished_run(
    *, checkpoints: int = 4, workflow: str = "squares", size: int = 1000
) -> WorkflowRun:
    now = timezone.now()
    run = WorkflowRun.objects.create(
        workflow_name=workflow,
        status=RunStatus.COMPLETED,
        engine_run_id=uuid.uuid4().hex,
        finished_at=now,
    )
    latest = None
    for step in range(checkpoints):
        latest = Checkpoint.objects.create(
            checkpoint_id=f"wr-{next(_ids):06d}",
            run=run,
            engine_run_id=run.engine_run_id,
            workflow_name=workflow,
            superstep=step,
            graph_signature_hash="sha256:test",
            document={},
            size_bytes=size,
            created_at=now - dt.timedelta(minutes=checkpoints - step),
        )
    run.latest_checkpoint = latest
    run.save()
    return run


def policy(name: str = "keep-1", **fields: Any) -> RetentionPolicy:
    fields.setdefault("keep_last_checkpoints", 1)
    fields.setdefault("status", "completed")
    return RetentionPolicy.objects.create(name=name, **fields)


def form(**fields: Any) -> dict[str, Any]:
    data = {
        "name": "keep-2",
        "workflow_pattern": "squares",
        "status": "completed",
        "keep_last_checkpoints": "2",
        "delete_checkpoints_older_than_days": "",
        "delete_runs_older_than_days": "",
        "enabled": "on",
    }
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}


def text(response: Any) -> str:
    return " ".join(response.content.decode().split())


# ---------------------------------------------------------------------------------- the page


def test_retention_page_lists_each_policy_with_its_rules_state_and_last_run(
    admin_role_client: Client,
) -> None:
    finished_run(checkpoints=3)
    applied = policy("keep-1", workflow_pattern="squares")
    policy(
        "old-runs",
        keep_last_checkpoints=None,
        delete_runs_older_than_days=90,
        status="failed",
        enabled=False,
    )
    services.policy_apply(applied.pk, dry_run=False, user=admin_role_client.user)  # type: ignore[attr-defined]

    page = text(admin_role_client.get("/retention/"))

    assert "Keeps the newest 1 checkpoint of each run" in page
    assert "Deletes whole runs finished more than 90 days ago" in page
    assert (
        "completed runs of <code>squares</code>" in page and "failed runs of <code>*</code>" in page
    )
    assert "Enabled" in page and "Disabled" in page
    assert "2 checkpoints deleted · by ada" in page  # keep-1's last real run
    assert "Never applied" in page  # old-runs
    assert f'hx-get="/retention/{applied.pk}/preview/"' in page


def test_retention_page_without_policies_or_holds_says_so(admin_role_client: Client) -> None:
    page = text(admin_role_client.get("/retention/"))

    assert "No retention policies" in page and "No run is on hold" in page


@pytest.mark.parametrize("role", ["Viewer", "Operator", "Approver"])
@pytest.mark.parametrize("url", ["/retention/", "/retention/new/"])
def test_retention_pages_are_refused_to_other_roles_with_a_message_and_recorded(
    client_as: Callable[..., Client], role: str, url: str
) -> None:
    policy("secret-policy")

    response = client_as(role).get(url)

    assert response.status_code == 403
    page = text(response)
    assert "Retention is managed by admins" in page and "secret-policy" not in page
    refusal = AuditEntry.objects.get()
    assert (refusal.action, refusal.outcome, refusal.target) == ("view", "denied", f"page {url}")


def test_a_policys_preview_is_the_retention_services_count_with_a_confirmation_that_says_it(
    admin_role_client: Client,
) -> None:
    finished_run(checkpoints=4, size=1000)
    finished_run(checkpoints=2, size=1000)
    keep = policy("keep-1")
    expected = services.retention_preview(keep)

    response = admin_role_client.get(f"/retention/{keep.pk}/preview/")

    assert (expected.checkpoints, expected.bytes) == (4, 4000)
    page = text(response)
    assert (
        response.status_code == 200 and '<strong class="cell-main">4 checkpoints</strong>' in page
    )
    assert "This deletes 4 checkpoints (3.9 KB) now. It cannot be undone." in page
    assert f'data-confirm="#run-dialog-{keep.pk}"' in page and f'id="run-dialog-{keep.pk}"' in page
    assert Checkpoint.objects.count() == 6  # a preview deletes nothing


def test_the_preview_is_refused_to_other_roles(client_as: Callable[..., Client]) -> None:
    keep = policy()
    assert client_as("Operator").get(f"/retention/{keep.pk}/preview/").status_code == 403


# ------------------------------------------------------------------------------ the form


def test_new_policy_is_saved_through_the_service_and_audited(admin_role_client: Client) -> None:
    response = admin_role_client.post("/retention/new/", form())

    assert response.status_code == 302 and response["Location"] == "/retention/"
    saved = RetentionPolicy.objects.get(name="keep-2")
    assert (saved.workflow_pattern, saved.keep_last_checkpoints, saved.enabled) == (
        "squares",
        2,
        True,
    )
    assert AuditEntry.objects.get(action="policy_change").details["created"] is True


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"keep_last_checkpoints": ""}, "__all__", "at least one rule"),
        ({"keep_last_checkpoints": "0"}, "keep_last_checkpoints", "Keep at least 1"),
        ({"keep_last_checkpoints": "9" * 5000}, "keep_last_checkpoints", "Enter a whole number"),
        (
            {"delete_runs_older_than_days": "100000000000"},
            "delete_runs_older_than_days",
            "At most 36,500",
        ),
        ({"name": "nul\x00name"}, "name", "Null characters are not allowed"),
        ({"name": ""}, "name", "This field is required"),
        ({"name": "taken"}, "name", "A policy named &#x27;taken&#x27; exists already"),
        ({"status": "running"}, "status", "Select a valid choice"),
    ],
)
def test_a_refused_policy_answers_422_with_the_message_beside_its_field(
    admin_role_client: Client, fields: dict[str, str], field: str, message: str
) -> None:
    policy("taken")

    response = admin_role_client.post("/retention/new/", form(**fields))

    assert response.status_code == 422
    form_errors = response.context["form"].errors
    assert field in form_errors, form_errors
    assert message in text(response)
    assert RetentionPolicy.objects.count() == 1


def test_a_lone_surrogate_in_a_form_arrives_replaced_and_is_saved_as_text(
    admin_role_client: Client,
) -> None:
    # Django decodes form bytes with errors="replace": "\ud800" can only arrive as U+FFFD.
    response = admin_role_client.post(
        "/retention/new/",
        "name=bad%ED%A0%80&workflow_pattern=*&status=completed&keep_last_checkpoints=1",
        content_type="application/x-www-form-urlencoded",
    )

    assert response.status_code == 302
    assert RetentionPolicy.objects.get().name.startswith("bad\ufffd")


def test_editing_a_policy_shows_its_values_and_saves_the_change(admin_role_client: Client) -> None:
    keep = policy("keep-1", workflow_pattern="squares")

    page = text(admin_role_client.get(f"/retention/{keep.pk}/edit/"))
    response = admin_role_client.post(
        f"/retention/{keep.pk}/edit/", form(name="keep-1", keep_last_checkpoints="7", enabled=None)
    )

    assert 'value="keep-1"' in page and 'value="squares"' in page and 'name="policy_id"' in page
    assert response.status_code == 302
    keep.refresh_from_db()
    assert (keep.keep_last_checkpoints, keep.enabled) == (7, False)
    change = AuditEntry.objects.get(action="policy_change")
    assert change.details["changes"]["keep_last_checkpoints"] == [1, 7]


@pytest.mark.parametrize("policy_id", ["999", "99999999999999999999999"])
def test_unknown_and_impossible_policy_ids_answer_404(
    admin_role_client: Client, policy_id: str
) -> None:
    for url in (f"/retention/{policy_id}/edit/", f"/retention/{policy_id}/preview/"):
        assert admin_role_client.get(url).status_code == 404
    for url in (f"/retention/{policy_id}/run/", f"/retention/{policy_id}/enabled/"):
        response = admin_role_client.post(url, {"enabled": "1"})
        assert response.status_code == 404 and "No retention policy has the id" in text(response)


def test_the_draft_preview_counts_an_unsaved_policy_and_saves_nothing(
    admin_role_client: Client,
) -> None:
    finished_run(checkpoints=5)

    counted = text(admin_role_client.post("/retention/preview/", form(keep_last_checkpoints="2")))
    problems = text(admin_role_client.post("/retention/preview/", form(keep_last_checkpoints="0")))

    assert "Saved and applied now, it would delete" in counted and "3 checkpoints" in counted
    assert "Fix these and the preview follows" in problems and "Keep at least 1" in problems
    assert RetentionPolicy.objects.count() == 0 and Checkpoint.objects.count() == 5


def test_the_draft_preview_of_an_edited_policy_does_not_trip_on_its_own_name(
    admin_role_client: Client,
) -> None:
    keep = policy("keep-2")
    page = text(admin_role_client.post("/retention/preview/", form(policy_id=str(keep.pk))))
    assert "Saved and applied now" in page and "exists already" not in page


# ----------------------------------------------------------------------- enable, run now


def test_disable_and_enable_a_policy(admin_role_client: Client) -> None:
    keep = policy()

    off = admin_role_client.post(f"/retention/{keep.pk}/enabled/", {"enabled": "0"})
    again = admin_role_client.post(f"/retention/{keep.pk}/enabled/", {"enabled": "0"})

    assert off.status_code == 302
    assert again.status_code == 409 and "already disabled" in text(again)
    keep.refresh_from_db()
    assert keep.enabled is False
    assert (
        admin_role_client.post(f"/retention/{keep.pk}/enabled/", {"enabled": "1"}).status_code
        == 302
    )
    keep.refresh_from_db()
    assert keep.enabled is True


def test_run_now_dry_run_deletes_nothing_and_a_real_run_deletes_what_the_preview_said(
    admin_role_client: Client,
) -> None:
    run = finished_run(checkpoints=4)
    keep = policy()

    dry = admin_role_client.post(f"/retention/{keep.pk}/run/", {"dry_run": "1"}, follow=True)
    assert Checkpoint.objects.filter(run=run).count() == 4
    real = admin_role_client.post(f"/retention/{keep.pk}/run/", follow=True)

    assert (
        "Dry run of keep-1: it would delete 3 checkpoints (2.9 KB) now. Nothing was deleted."
        in text(dry)
    )
    assert "keep-1 deleted 3 checkpoints (2.9 KB)." in text(real)
    assert Checkpoint.objects.filter(run=run).count() == 1
    prune = AuditEntry.objects.get(action="prune")
    assert (prune.actor_name, prune.target, prune.details["checkpoints"]) == (
        "ada",
        "policy keep-1",
        3,
    )


@pytest.mark.parametrize(
    ("url", "data", "action"),
    [
        ("/retention/new/", form(), "policy_change"),
        ("/retention/{pk}/edit/", form(), "policy_change"),
        ("/retention/{pk}/enabled/", {"enabled": "0"}, "policy_change"),
        ("/retention/{pk}/run/", {}, "prune"),
        ("/retention/holds/", {"run": "{run}", "reason": "x"}, "hold"),
        ("/retention/holds/{run}/release/", {}, "release"),
    ],
)
def test_changes_by_other_roles_are_refused_before_anything_happens_and_recorded(
    client_as: Callable[..., Client], url: str, data: dict[str, str], action: str
) -> None:
    run = finished_run(checkpoints=3)
    WorkflowRun.objects.filter(pk=run.pk).update(on_hold=True, hold_reason="kept")
    keep = policy()
    fill = {"pk": keep.pk, "run": run.pk}

    response = client_as("Operator").post(
        url.format(**fill), {k: v.format(**fill) for k, v in data.items()}
    )

    assert response.status_code == 403 and "may not" in text(response)
    refusal = AuditEntry.objects.get()
    assert (refusal.action, refusal.outcome) == (action, "denied")
    assert Checkpoint.objects.count() == 3 and RetentionPolicy.objects.get() == keep
    run.refresh_from_db()
    assert run.on_hold and keep.enabled


def test_a_refused_hold_records_whatever_run_text_was_sent(
    client_as: Callable[..., Client],
) -> None:
    response = client_as("Operator").post("/retention/holds/", {"run": "nul\x00", "reason": "x"})

    assert response.status_code == 403
    assert AuditEntry.objects.get().target == "run nul\\u0000"


# ---------------------------------------------------------------------------------- holds


def test_holds_are_listed_with_reason_who_and_when_and_released_through_run_hold(
    admin_role_client: Client,
) -> None:
    run = finished_run(checkpoints=2)
    services.run_hold(run.pk, user=admin_role_client.user, hold=True, reason="litigation 42")  # type: ignore[attr-defined]

    page = text(admin_role_client.get("/retention/"))
    released = admin_role_client.post(f"/retention/holds/{run.pk}/release/", follow=True)

    assert f'data-held-run="{run.pk}"' in page and "litigation 42" in page
    assert 'ada <span class="cell-sub"><time' in page
    assert 'data-confirm="#release-dialog"' in page
    run.refresh_from_db()
    assert run.on_hold is False
    assert "released: retention applies to it again" in text(released)
    assert "No run is on hold" in text(released)
    assert [e.action for e in AuditEntry.objects.order_by("id")] == ["hold", "release"]


def test_the_hold_form_puts_a_run_on_hold(admin_role_client: Client) -> None:
    run = finished_run(checkpoints=2)

    response = admin_role_client.post(
        "/retention/holds/", {"run": f" {run.pk} ", "reason": "audit 2026"}
    )

    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.on_hold, run.hold_reason) == (True, "audit 2026")
    assert AuditEntry.objects.get(action="hold").details == {"reason": "audit 2026"}


@pytest.mark.parametrize(
    ("run", "reason", "status", "message"),
    [
        ("not-a-run", "x", 422, "Not a run id"),
        ("9" * 10_000, "x", 422, "Not a run id"),
        ("{missing}", "x", 404, "no run with id"),
        ("{held}", "x", 409, "already on hold"),
        ("{held}", "", 422, "This field is required"),
        ("{held}", "r" * 501, 422, "at most 500 characters"),
    ],
)
def test_the_hold_form_refuses_bad_input_beside_the_field(
    admin_role_client: Client, run: str, reason: str, status: int, message: str
) -> None:
    held = finished_run(checkpoints=1)
    WorkflowRun.objects.filter(pk=held.pk).update(on_hold=True)

    response = admin_role_client.post(
        "/retention/holds/",
        {"run": run.format(held=held.pk, missing=uuid.uuid4()), "reason": reason},
    )

    assert response.status_code == status
    assert message in text(response)
    assert response.context["hold_form"].errors


def test_releasing_a_run_that_is_not_held_is_a_conflict_with_a_message(
    admin_role_client: Client,
) -> None:
    run = finished_run(checkpoints=1)
    response = admin_role_client.post(f"/retention/holds/{run.pk}/release/")
    assert response.status_code == 409 and "is not on hold" in text(response)


# -------------------------------------------------------------------------------- queries


def test_the_retention_page_takes_the_same_queries_for_one_policy_and_hold_as_for_many(
    admin_role_client: Client, django_assert_max_num_queries: Any
) -> None:
    def add(count: int) -> None:
        for _ in range(count):
            n = next(_ids)
            keep = policy(f"p-{n}")
            run = finished_run(checkpoints=1)
            services.run_hold(run.pk, user=admin_role_client.user, hold=True, reason=f"r{n}")  # type: ignore[attr-defined]
            services.policy_apply(keep.pk, dry_run=False, user=admin_role_client.user)  # type: ignore[attr-defined]

    add(1)
    with django_assert_max_num_queries(9) as few:
        admin_role_client.get("/retention/")
    add(20)
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = admin_role_client.get("/retention/")
    assert page.content.decode().count("data-policy=") == 21
    assert page.content.decode().count("data-held-run=") == 21
