"""The runs list (filters, sort, keyset pages, live partial), the start form, access and auth."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard import services
from dashboard.models import (
    ApprovalRequest,
    AuditEntry,
    Checkpoint,
    RunStatus,
    Schedule,
    WorkflowRun,
)

pytestmark = pytest.mark.django_db

RUN_ID = re.compile(r'href="/runs/([0-9a-f-]{36})/"')
ANY_RUN = "00000000-0000-4000-8000-000000000001"


def run_ids(html: str) -> list[str]:
    return list(dict.fromkeys(RUN_ID.findall(html)))


def waiting_run(make_run: Callable[..., Any], **fields: Any) -> WorkflowRun:
    run = make_run(status="waiting", workflow_name="return-replace", **fields)
    checkpoint = Checkpoint.objects.create(
        checkpoint_id=uuid.uuid4().hex,
        run=run,
        engine_run_id=run.engine_run_id,
        workflow_name=run.workflow_name,
        superstep=4,
        graph_signature_hash="x",
        document={"version": "1", "blob_refs": []},
        size_bytes=10,
        pending_request_count=1,
    )
    ApprovalRequest.objects.create(
        request_id=f"{run.engine_run_id}:r1",
        engine_request_id="r1",
        engine_run_id=run.engine_run_id,
        run=run,
        checkpoint=checkpoint,
        executor_id="hitl-gate",
        request_data={"q": 1},
        created_at=timezone.now() - dt.timedelta(minutes=7),
    )
    return run


# ------------------------------------------------------------------------------ access


PAGES = [
    "/",
    "/runs/start/",
    f"/runs/{ANY_RUN}/",
    f"/runs/{ANY_RUN}/checkpoints/abc/",
    "/approvals/",
    "/approvals/archive/",
    "/storage/",
]


@pytest.mark.parametrize("path", PAGES)
def test_anonymous_visitors_are_sent_to_the_login_page(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={path}"


def test_an_htmx_request_without_a_session_redirects_the_whole_page(client: Client) -> None:
    response = client.get(
        "/",
        headers={
            "HX-Request": "true",
            "HX-Target": "runs-table",
            "HX-Current-URL": "http://testserver/?status=failed",
        },
    )
    assert response.status_code == 401
    assert response["HX-Redirect"] == "/login/?next=%2F%3Fstatus%3Dfailed"


def test_a_user_without_a_role_is_told_on_the_login_page(client_as: Callable[..., Client]) -> None:
    client = client_as()
    response = client.get("/", follow=True)
    assert response.redirect_chain == [("/login/?next=/", 302)]
    assert "Your account cannot open that page" in response.content.decode()
    refusal = AuditEntry.objects.get()
    assert (refusal.action, refusal.outcome, refusal.target) == ("view", "denied", "page /")


def test_actions_only_accept_post(client_as: Callable[..., Client]) -> None:
    client = client_as("Operator")
    assert client.get(f"/runs/{ANY_RUN}/cancel/").status_code == 405


def test_login_and_logout_use_djangos_views(client: Client, role_user: Callable[..., Any]) -> None:
    role_user("olga", "Operator")
    page = client.get("/login/")
    assert page.status_code == 200 and 'name="username"' in page.content.decode()
    response = client.post("/login/", {"username": "olga", "password": "olga", "next": "/storage/"})
    assert response.status_code == 302 and response["Location"] == "/storage/"
    assert client.get("/storage/").status_code == 200
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"] == "/login/"
    assert client.get("/").status_code == 302


@pytest.mark.parametrize(
    ("roles", "landing"),
    [
        (("Approver",), "/approvals/"),
        (("Operator", "Approver"), "/"),
        (("Viewer",), "/"),
    ],
)
def test_login_lands_approvers_on_the_inbox_unless_next_says_otherwise(
    client: Client, role_user: Callable[..., Any], roles: tuple[str, ...], landing: str
) -> None:
    role_user("ann", *roles)
    plain = client.post("/login/", {"username": "ann", "password": "ann"})
    client.post("/logout/")
    told = client.post("/login/", {"username": "ann", "password": "ann", "next": "/runs/start/"})

    assert plain.status_code == 302 and plain["Location"] == landing
    assert told.status_code == 302 and told["Location"] == "/runs/start/"
    assert client.get("/").status_code == 200  # the runs list still opens for every role


# ------------------------------------------------------------------------------ runs list


def test_runs_list_shows_status_workflow_times_superstep_and_waiting_on(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    done = make_run(status="completed", workflow_name="squares", current_superstep=9)
    waiting = waiting_run(make_run, current_superstep=4)
    html = client_as("Viewer").get("/").content.decode()
    assert run_ids(html) == [str(waiting.pk), str(done.pk)]
    assert "status-completed" in html and "status-waiting" in html
    assert f"?request={waiting.engine_run_id}%3Ar1" in html  # the waiting-on link into the inbox
    assert "hitl-gate" in html and "data-duration-since" in html
    assert 'hx-ext="ws" ws-connect="/ws/runs/?view=html"' in html
    assert 'href="/runs/start/"' not in html  # a viewer is not offered what it may not do


def test_runs_list_filters_by_status_workflow_dates_and_text(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    now = timezone.now()
    old = make_run(status="failed", workflow_name="refund", created_at=now - dt.timedelta(days=10))
    new = make_run(
        status="completed", workflow_name="squares", input={"order_id": "ORD-77", "limit": 1}
    )
    client = client_as("Viewer")

    def ids(query: str) -> list[str]:
        return run_ids(client.get("/?" + query).content.decode())

    assert ids("status=failed") == [str(old.pk)]
    assert ids("workflow=squares") == [str(new.pk)]
    assert ids(f"created_to={(now - dt.timedelta(days=5)).date()}") == [str(old.pk)]
    assert ids(f"created_from={(now - dt.timedelta(days=1)).date()}") == [str(new.pk)]
    assert ids("q=ord-77") == [str(new.pk)]
    assert ids(f"q={str(old.pk)[:8]}") == [str(old.pk)]
    assert ids(f"q={old.pk}") == [str(old.pk)]
    assert ids("status=bogus") == [str(new.pk), str(old.pk)]  # an invalid filter is ignored
    empty = client.get("/?status=cancelled").content.decode()
    assert "No runs match these filters" in empty


def test_a_scheduled_run_names_its_schedule_and_the_list_filters_by_trigger(
    client_as: Callable[..., Client], make_run: Callable[..., Any], role_user: Callable[..., Any]
) -> None:
    schedule = Schedule.objects.create(
        name="nightly squares", workflow_name="squares", kind="cron", cron="0 3 * * *"
    )
    ticked = make_run(schedule=schedule)
    by_hand = make_run(created_by=role_user("ana", "Operator"))
    orphan = make_run()  # neither a schedule nor a person on record
    client = client_as("Viewer")

    def ids(query: str) -> list[str]:
        return run_ids(client.get("/?" + query).content.decode())

    page = client.get("/").content.decode()
    link = f'href="/schedules/#schedule-{schedule.pk}" data-schedule-link>nightly squares</a>'
    assert link in page
    assert ids("trigger=schedule") == [str(ticked.pk)]
    assert ids("trigger=manual") == [str(by_hand.pk)]
    assert set(ids("trigger=bogus")) == {str(ticked.pk), str(by_hand.pk), str(orphan.pk)}
    assert 'value="manual" selected' in client.get("/?trigger=manual").content.decode()

    # A renamed schedule shows its new name, though the finished run's row was kept.
    Schedule.objects.filter(pk=schedule.pk).update(name="squares at three")
    assert ">squares at three</a>" in client.get("/").content.decode()


def test_runs_list_pages_with_keyset_cursors_that_keep_the_filters(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    now = timezone.now()
    runs = [
        make_run(status="completed", created_at=now - dt.timedelta(seconds=i)) for i in range(120)
    ]
    make_run(status="failed", created_at=now)  # filtered out everywhere below
    client = client_as("Viewer")
    first = client.get("/?status=completed")
    assert first.context["page"].has_next and not first.context["page"].has_previous
    assert run_ids(first.content.decode()) == [str(r.pk) for r in runs[:50]]
    next_url = first.context["page"].next_url
    assert "status=completed" in next_url and "after=" in next_url
    second = client.get(next_url)
    assert run_ids(second.content.decode()) == [str(r.pk) for r in runs[50:100]]
    third = client.get(second.context["page"].next_url)
    assert run_ids(third.content.decode()) == [str(r.pk) for r in runs[100:]]
    assert not third.context["page"].has_next
    back = client.get(third.context["page"].previous_url)
    assert run_ids(back.content.decode()) == [str(r.pk) for r in runs[50:100]]
    assert back.context["page"].has_previous and back.context["page"].has_next
    oldest = client.get("/?status=completed&sort=created")
    assert run_ids(oldest.content.decode())[:2] == [str(runs[-1].pk), str(runs[-2].pk)]
    assert client.get("/?after=not-a-cursor").status_code == 200


def test_runs_list_table_partial_for_the_live_refresh(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    make_run(status="running")
    response = client_as("Viewer").get(
        "/?status=running", headers={"HX-Request": "true", "HX-Target": "runs-table"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="runs-table"') and "<html" not in html
    # The refresh re-sends the current query from hidden inputs, never from an hx-* attribute.
    assert '<input type="hidden" name="status" value="running">' in html
    assert 'hx-include="#runs-query"' in html and "hx-vals" not in html


def test_runs_list_stays_a_constant_number_of_queries(
    client_as: Callable[..., Client],
    make_run: Callable[..., Any],
    django_assert_max_num_queries: Any,
) -> None:
    client = client_as("Viewer")
    for _ in range(30):
        waiting_run(make_run)
    # session, user, the user's and the groups' permissions, runs, their approvals, their
    # durations, the roles granted for named workflows (a Viewer lacks some permission, so
    # whether a grant gives it is read, once), the views pinned in the nav, the nav badge.
    with django_assert_max_num_queries(10):
        assert client.get("/").status_code == 200


# ------------------------------------------------------------------------------ start a run


def test_start_form_is_generated_from_the_input_type_with_defaults(
    client_as: Callable[..., Client],
) -> None:
    html = client_as("Operator").get("/runs/start/?workflow=return-replace").content.decode()
    assert 'name="input-order_id"' in html and 'value="ORD-1001"' in html
    assert 'name="input-refund_amount"' in html and 'step="any"' in html
    as_json = client_as("Operator", username="o2").get(
        "/runs/start/?workflow=return-replace&mode=json"
    )
    assert (
        'name="input-json"' in as_json.content.decode()
        and "data-json-validate" in as_json.content.decode()
    )


def test_start_form_swaps_its_fields_when_the_workflow_changes(
    client_as: Callable[..., Client],
) -> None:
    response = client_as("Operator").get(
        "/runs/start/?workflow=squares", headers={"HX-Request": "true", "HX-Target": "start-input"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="start-input"') and 'name="input-limit"' in html


def test_start_run_queues_the_run_and_redirects_to_it(client_as: Callable[..., Client]) -> None:
    client = client_as("Operator")
    response = client.post(
        "/runs/start/", {"workflow": "squares", "input-limit": "4", "input-work_ms": "0"}
    )
    run = WorkflowRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.input == {"limit": 4, "work_ms": 0} and run.status == RunStatus.QUEUED
    assert run.created_by == client.user  # type: ignore[attr-defined]


def test_start_run_shows_field_errors_beside_the_field(
    client_as: Callable[..., Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = client_as("Operator")
    typo = client.post("/runs/start/", {"workflow": "squares", "input-limit": "many"})
    # In the words the API and the browser use for the same mistake (pydantic's).
    assert typo.status_code == 422 and "Input should be a valid integer" in typo.content.decode()

    def refuse(**kwargs: Any) -> None:
        raise services.InvalidInput(
            "the input does not fit the workflow", errors={"limit": "must be at most 1000"}
        )

    monkeypatch.setattr(services, "run_start", refuse)
    # Within the bounds the form knows; the service's refusal goes beside the field.
    response = client.post("/runs/start/", {"workflow": "squares", "input-limit": "500"})
    html = response.content.decode()
    assert response.status_code == 422
    assert 'id="id_input-limit_error"' in html and "must be at most 1000" in html
    assert "the input does not fit the workflow" in html
    assert not WorkflowRun.objects.exists()


def test_start_run_raw_json_errors_name_the_path(client_as: Callable[..., Client]) -> None:
    response = client_as("Operator").post(
        "/runs/start/", {"workflow": "squares", "mode": "json", "input-json": '{"limit": "x"}'}
    )
    html = response.content.decode()
    assert response.status_code == 422 and "limit: Input should be a valid integer" in html


def test_a_viewer_cannot_start_runs_and_is_told_so(client_as: Callable[..., Client]) -> None:
    response = client_as("Viewer").post("/runs/start/", {"workflow": "squares", "input-limit": "2"})
    assert response.status_code == 403
    assert "may look at runs but not start them" in response.content.decode()
    assert not WorkflowRun.objects.exists()


def test_reverse_names_used_by_the_layout() -> None:
    assert reverse("dashboard:run_list") == "/"
    assert reverse("dashboard:approval_inbox") == "/approvals/"
    assert reverse("dashboard:storage") == "/storage/"
    assert (reverse("login"), reverse("logout")) == ("/login/", "/logout/")


def test_search_finds_text_in_the_output_and_the_error_too(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    client = client_as("Viewer")
    by_output = make_run(status="completed", output={"note": "refund-zebra-42"})
    by_error = make_run(status="failed", error_message="upstream said ZEBRA-timeout")
    make_run(status="completed", output={"note": "nothing here"})

    found = {row[0].pk for row in client.get("/", {"q": "zebra"}).context["rows"]}

    assert found == {by_output.pk, by_error.pk}


def test_held_up_by_an_executor_finds_runs_waiting_on_it_or_failed_in_it(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    from dashboard.models import ApprovalRequest, Checkpoint, RunEvent

    client = client_as("Viewer")
    waiting = make_run(status="waiting", workflow_name="return-replace")
    checkpoint = Checkpoint.objects.create(
        checkpoint_id="cp-held",
        run=waiting,
        engine_run_id=waiting.engine_run_id,
        superstep=4,
        workflow_name="return-replace",
        graph_signature_hash="h",
        document={},
        size_bytes=2,
    )
    ApprovalRequest.objects.create(
        request_id=f"{waiting.engine_run_id}:r",
        engine_request_id="r",
        engine_run_id=waiting.engine_run_id,
        run=waiting,
        checkpoint=checkpoint,
        executor_id="hitl-gate",
    )
    failed = make_run(status="failed", workflow_name="fail-at-step")
    RunEvent.objects.create(
        run=failed,
        seq=1,
        type="executor_failed",
        data={"type": "executor_failed", "executor_id": "counter"},
    )
    make_run(status="completed")

    def held_by(executor: str) -> set[Any]:
        return {row[0].pk for row in client.get("/", {"executor": executor}).context["rows"]}

    assert held_by("hitl-gate") == {waiting.pk}
    assert held_by("counter") == {failed.pk}
    page = client.get("/").content.decode()
    assert '<option value="hitl-gate">' in page


def test_runs_list_compact_density_is_a_table_class_kept_by_refresh_and_remembered(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    make_run(status="completed")
    client = client_as("Viewer")
    normal = client.get("/?status=completed").content.decode()
    assert "runs-table-compact" not in normal
    assert 'id="runs-density" href="?status=completed&amp;density=compact"' in normal

    compact = client.get("/?status=completed&density=compact")
    html = compact.content.decode()
    assert 'class="table table-stack runs-table runs-table-compact"' in html
    assert '<input type="hidden" name="density" value="compact">' in html  # the live refresh
    assert 'href="?status=completed&amp;density=normal"' in html
    assert compact.cookies["runs_density"].value == "compact"
    # A saved view or an action on every match takes the filter, not the density.
    assert "density" not in compact.context["filter_query"]

    # Remembered: a later visit without the parameter, and its refresh, stay compact.
    assert "runs-table-compact" in client.get("/").content.decode()
    refresh = client.get("/", headers={"HX-Request": "true", "HX-Target": "runs-table"})
    assert "runs-table-compact" in refresh.content.decode()
    # The finished row is the same markup in both densities (rows are cached as HTML).
    row = re.search(r"<tbody>.*</tbody>", html, re.DOTALL)
    again = re.search(r"<tbody>.*</tbody>", normal, re.DOTALL)
    assert row and again and row.group(0) == again.group(0)

    back = client.get("/?density=normal")
    assert back.cookies["runs_density"].value == "normal"
    assert "runs-table-compact" not in client.get("/").content.decode()
    assert client.get("/?density=bogus").status_code == 200


def test_the_runs_list_counts_runs_per_status_and_shows_a_failure_s_first_line(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    make_run(status="completed")
    make_run(status="completed")
    make_run(status="failed", error_message="ValueError: no stock\nTraceback (most recent call)")

    html = client_as("Viewer").get("/?status=failed").content.decode()

    chips = re.search(r'<nav class="status-chips".*?</nav>', html, re.DOTALL)
    assert chips is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", chips[0]).split())
    assert text == "All 3 Completed 2 Failed 1", text
    assert 'aria-current="true">Failed' in chips[0]
    assert '<span class="cell-sub run-error"' in html and "ValueError: no stock<" in html
    assert "Traceback (most recent call)</span>" not in html
