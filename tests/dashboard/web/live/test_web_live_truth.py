"""The server side of "every live element is true": what an action that came too late answers
(in a sentence, with the page's actions and header as they are now), how a stale decision form
gives way to the decision, durations without the time spent waiting for a person, a cancelled
run's graph, and the small print of times in sentences."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.utils import timezone

from dashboard import services
from dashboard.models import (
    ApprovalRequest,
    ApprovalStatus,
    Checkpoint,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.web import conflicts
from dashboard.web.durations import run_duration, run_durations, waiting_spells
from dashboard.web.live import fragments as live_fragments
from dashboard.web.run_page import graph_state
from dashboard.web.timefmt import ago, duration_text

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true"}
WHY = {"reason": "a duplicate"}
TEMPLATES = Path(__file__).resolve().parents[4] / "templates"
NODE = re.compile(r'<g class="node state-(\w+)" data-executor="([^"]+)"')
JUST_NOW = r"(just now|\d+ seconds ago)"


def gate_run(drive: Callable[..., WorkflowRun], user: Any, order: str = "ORD-7") -> WorkflowRun:
    """A return-replace run waiting at its approval gate."""
    return drive(
        services.run_start,
        workflow_name="return-replace",
        input={"order_id": order, "work_ms": 0},
        user=user,
    )


def request_of(run: WorkflowRun) -> ApprovalRequest:
    return ApprovalRequest.objects.select_related("run", "decided_by", "claimed_by").get(
        run=run, status=ApprovalStatus.PENDING
    )


def oob_parts(html: str) -> list[str]:
    """Where each out-of-band part of an htmx answer goes."""
    found = re.findall(r'<(\w+) id="([\w-]+)"[^>]*hx-swap-oob="true"', html)
    return [f"#{name}" for _, name in found] + re.findall(r'hx-swap-oob="(\w+:#[\w-]+)"', html)


# ------------------------------------------------------------------------ run actions, too late


def test_a_cancel_that_came_too_late_answers_in_place_with_who_cancelled_it(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", username="ann")
    run = gate_run(drive, ann.user)  # type: ignore[attr-defined]
    bob = client_as("Operator", username="bob")
    assert bob.post(f"/runs/{run.pk}/cancel/", WHY, headers=HTMX).status_code == 200

    late = ann.post(f"/runs/{run.pk}/cancel/", WHY, headers=HTMX)
    html = late.content.decode()
    assert late.status_code == 409  # app.js swaps a 409 like content: the page stays
    # First the actions (the request's target) as they are now: nothing left to cancel...
    assert html.lstrip().startswith('<div id="run-actions"') and "Cancel run" not in html
    # ...then the header, outcome and details, and the toast, out of band.
    assert oob_parts(html) == ["#run-header", "#run-outcome", "#run-details", "beforeend:#toasts"]
    assert 'class="pill status-cancelled"' in html
    toast = re.search(
        r'<div class="toast toast-error" role="alert"><p class="toast-text">(.*?)</p>', html
    )
    assert toast is not None and re.fullmatch(rf"bob cancelled this run {JUST_NOW}\.", toast[1])
    assert "is already cancelled" not in html  # the service's words are for the API


def test_a_cancel_over_htmx_answers_with_the_actions_and_a_toast(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", username="ann")
    run = gate_run(drive, ann.user)  # type: ignore[attr-defined]
    done = ann.post(f"/runs/{run.pk}/cancel/", WHY, headers=HTMX)
    html = done.content.decode()
    assert done.status_code == 200 and html.lstrip().startswith('<div id="run-actions"')
    assert f"Run {str(run.pk)[:8]} was cancelled." in html and "toast-success" in html
    # Without htmx the browser still gets the plain round trip.
    assert ann.get(f"/runs/{run.pk}/").status_code == 200


def test_a_retry_refused_says_what_the_run_is_doing_instead(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", username="ann")
    done = drive(
        services.run_start,
        workflow_name="squares",
        input={"limit": 2, "work_ms": 0},
        user=ann.user,  # type: ignore[attr-defined]
    )
    refused = ann.post(f"/runs/{done.pk}/retry/", headers=HTMX)
    assert refused.status_code == 409
    assert re.search(
        rf"This run completed {JUST_NOW}; only a failed run can be retried\.",
        refused.content.decode(),
    )


def test_run_conflict_names_who_moved_the_run_and_when(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", username="ann")
    run = gate_run(drive, ann.user)  # type: ignore[attr-defined]
    services.run_cancel(run.pk, user=ann.user, reason="a duplicate")  # type: ignore[attr-defined]
    run.refresh_from_db()
    said = conflicts.run_conflict(run, "cancel", user=ann.user, fallback="raw")  # type: ignore[attr-defined]
    assert re.fullmatch(rf"You cancelled this run {JUST_NOW}\.", said)
    other = client_as("Viewer", username="vic")
    said = conflicts.run_conflict(run, "cancel", user=other.user, fallback="raw")  # type: ignore[attr-defined]
    assert re.fullmatch(rf"ann cancelled this run {JUST_NOW}\.", said)
    assert conflicts.run_conflict(run, "hold", user=other.user, fallback="raw") == "raw"  # type: ignore[attr-defined]


# --------------------------------------------------------------------- approvals, decided elsewhere


def test_a_decision_that_lost_the_race_is_told_as_a_sentence(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", "Approver", username="ann")
    run = gate_run(drive, ann.user)  # type: ignore[attr-defined]
    approval = request_of(run)
    bob = client_as("Approver", username="bob")
    url = f"/approvals/{approval.request_id}/decide/"
    assert bob.post(url, {"decision": "approve", "reason": "ok"}, headers=HTMX).status_code == 200

    late = ann.post(url, {"decision": "reject", "reason": "no"}, headers=HTMX)
    html = late.content.decode()
    assert late.status_code == 409
    error = re.search(r'id="decide-error"><strong>Not recorded.</strong> (.*?)</div>', html)
    assert error is not None and re.fullmatch(rf"bob already approved this {JUST_NOW}\.", error[1])
    assert approval.request_id not in error[1]


def test_approval_conflict_sentences(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", "Approver", username="ann")
    bob = client_as("Approver", username="bob")
    first = request_of(gate_run(drive, ann.user, "ORD-A"))  # type: ignore[attr-defined]
    said = conflicts.approval_conflict(first, user=ann.user, fallback="raw")  # type: ignore[attr-defined]
    assert said == "raw"  # nothing to explain: the service's message stands

    services.approval_claim(first.request_id, user=bob.user)  # type: ignore[attr-defined]
    claimed = request_of(first.run)
    said = conflicts.approval_conflict(claimed, user=ann.user, fallback="raw")  # type: ignore[attr-defined]
    assert re.fullmatch(
        rf"This request is already claimed by bob \({JUST_NOW}\): only they can decide it or "
        "give it back, unless you take it over.",
        said,
    )
    released = conflicts.approval_conflict(claimed, user=ann.user, fallback="raw", release=True)  # type: ignore[attr-defined]
    assert released.startswith("This request is not claimed by you")

    services.approval_decide(first.request_id, user=bob.user, approved=False, reason="no stock")  # type: ignore[attr-defined]
    decided = ApprovalRequest.objects.get(pk=first.pk)
    said = conflicts.approval_conflict(decided, user=bob.user, fallback="raw")  # type: ignore[attr-defined]
    assert re.fullmatch(rf"You already rejected this {JUST_NOW}\.", said)

    second = request_of(gate_run(drive, ann.user, "ORD-B"))  # type: ignore[attr-defined]
    services.run_cancel(second.run_id, user=ann.user, reason="a duplicate")  # type: ignore[attr-defined]
    cancelled = ApprovalRequest.objects.get(pk=second.pk)
    said = conflicts.approval_conflict(cancelled, user=bob.user, fallback="raw")  # type: ignore[attr-defined]
    assert said.startswith("This request was cancelled") and "resumed" in said
    assert conflicts.approval_conflict(None, user=bob.user, fallback="raw") == (  # type: ignore[attr-defined]
        "This request no longer exists."
    )


def test_the_status_reload_replaces_a_form_whose_request_was_decided_elsewhere(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", "Approver", username="ann")
    approval = request_of(gate_run(drive, ann.user))  # type: ignore[attr-defined]
    status_url = f"/approvals/{approval.request_id}/status/"

    # Still pending: the status line alone, so what the approver is typing stays.
    page = ann.get(f"/approvals/?request={approval.request_id}").content.decode()
    assert f'{status_url}?shown=pending"' in page
    quiet = ann.get(f"{status_url}?shown=pending", headers=HTMX).content.decode()
    # (the claim line and the decision bar follow the claim live; the form is left alone)
    assert "#approval-decision" not in oob_parts(quiet) and 'id="approval-decision"' not in quiet

    bob = client_as("Approver", username="bob")
    services.approval_decide(
        approval.request_id,
        user=bob.user,  # type: ignore[attr-defined]
        approved=True,
        response={"discount_percent": 0},
        reason="Within policy",
    )
    html = ann.get(f"{status_url}?shown=pending", headers=HTMX).content.decode()
    assert (
        html.lstrip().startswith('<div id="approval-status"')
        and f"{status_url}?shown=approved" in html
    )
    assert "#approval-decision" in oob_parts(html)
    decision = html[html.index('id="approval-decision"') :]
    assert 'value="approve"' not in decision and "<form" not in decision
    assert re.search(
        r"Approved</span> by bob <time[^>]*>[^<]*</time> — reason “Within policy”", decision
    )
    # A panel that already shows the decision is left alone.
    settled = ann.get(f"{status_url}?shown=approved", headers=HTMX).content.decode()
    assert 'id="approval-decision"' not in settled


def test_the_run_page_says_who_let_the_run_go_on(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", "Approver", username="ann")
    run = gate_run(drive, ann.user)  # type: ignore[attr-defined]
    approval = request_of(run)
    done = drive(
        services.approval_decide,
        approval.request_id,
        user=ann.user,  # type: ignore[attr-defined]
        approved=True,
        response={"discount_percent": 5},
        reason="Loyal customer",
    )
    assert done.status == RunStatus.COMPLETED
    html = ann.get(f"/runs/{run.pk}/").content.decode()
    outcome = html[
        html.index('id="run-outcome"') : html.index("</section>", html.index('id="run-outcome"'))
    ]
    assert re.search(
        r'<span class="decision-executor">hitl-gate</span> <span class="decision-status">Approved'
        r"</span> by ann <time[^>]*>[^<]*</time> — reason “Loyal customer”",
        outcome,
    )


# ----------------------------------------------------------------------- cancelled run's graph


def test_a_cancelled_run_shows_what_it_stopped_as_cancelled_live(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", username="ann")
    run = gate_run(drive, ann.user)  # type: ignore[attr-defined]
    before = run.last_event_seq
    services.run_cancel(run.pk, user=ann.user, reason="a duplicate")  # type: ignore[attr-defined]
    run.refresh_from_db()
    _, states = graph_state.run_graph(run)
    assert states["hitl-gate"] == "cancelled"  # it was waiting for a person, and never heard
    assert states["check-eligibility"] == "done" and "finalize" not in states

    events = list(RunEvent.objects.filter(run=run, seq__gt=before).order_by("seq"))
    message = live_fragments.run_update(run.pk, events)
    nodes = {name: state for state, name in NODE.findall(message)}
    assert nodes["hitl-gate"] == "cancelled" and nodes["finalize"] == "idle"
    # The header says it too, with the key the actions follow (static/js/live.js).
    assert 'data-live-key="cancelled:1" data-live-key-for="run-actions"' in message
    assert re.search(r"This run was cancelled <time[^>]*>[^<]*</time>\. Resume it", message)


def test_the_actions_carry_the_key_the_header_carries(
    client_as: Callable[..., Client], drive: Callable[..., WorkflowRun]
) -> None:
    ann = client_as("Operator", username="ann")
    run = gate_run(drive, ann.user)  # type: ignore[attr-defined]
    page = ann.get(f"/runs/{run.pk}/").content.decode()
    actions = ann.get(f"/runs/{run.pk}/actions/", headers=HTMX).content.decode()
    assert 'data-live-key="waiting:1" data-live-key-for="run-actions"' in page
    assert "data-live-region" in actions and 'data-live-key="waiting:1"' in actions


# --------------------------------------------------------------------------------- durations


def at(seconds: float) -> dt.datetime:
    return dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)


def test_waiting_spells_add_up_the_waits_and_say_when_the_open_one_began() -> None:
    statuses = [
        (at(0), "queued"),
        (at(1), "running"),
        (at(5), "waiting"),
        (at(65), "queued"),
        (at(66), "running"),
        (at(70), "waiting"),
    ]
    assert waiting_spells(statuses) == (dt.timedelta(seconds=60), at(70))
    assert waiting_spells([*statuses, (at(100), "cancelled")]) == (dt.timedelta(seconds=90), None)
    assert waiting_spells([]) == (dt.timedelta(0), None)


def add_statuses(
    run: WorkflowRun, statuses: list[tuple[float, str]], *, first_seq: int = 1
) -> None:
    for seq, (seconds, status) in enumerate(statuses, start=first_seq):
        RunEvent.objects.create(
            run=run, seq=seq, type="run_status", data={"status": status}, created_at=at(seconds)
        )


def with_request(run: WorkflowRun) -> None:
    checkpoint = Checkpoint.objects.create(
        checkpoint_id=uuid.uuid4().hex,
        run=run,
        engine_run_id=run.engine_run_id,
        workflow_name=run.workflow_name,
        superstep=1,
        graph_signature_hash="x",
        document={"version": "1", "blob_refs": []},
        size_bytes=10,
    )
    ApprovalRequest.objects.create(
        request_id=f"{run.engine_run_id}:r1",
        engine_request_id="r1",
        engine_run_id=run.engine_run_id,
        run=run,
        checkpoint=checkpoint,
        executor_id="gate",
        status=ApprovalStatus.CANCELLED,  # how it ended does not matter: it was asked
        decided_at=at(65),
    )


def test_a_finished_run_s_duration_leaves_out_its_wait(make_run: Callable[..., Any]) -> None:
    run = make_run(status="completed", started_at=at(1), finished_at=at(80))
    with_request(run)
    add_statuses(
        run,
        [
            (0, "queued"),
            (1, "running"),
            (5, "waiting"),
            (65, "queued"),
            (66, "running"),
            (80, "completed"),
        ],
    )
    duration = run_duration(run)
    assert duration.since == at(62) and duration.until == at(80)  # 18 s at work
    assert duration.waited_text == "1 min 00 s" and duration.waiting_since is None
    assert duration.attempts == 1


def test_a_retried_run_s_active_time_leaves_out_the_time_it_sat_failed(
    make_run: Callable[..., Any],
) -> None:
    run = make_run(status="completed", started_at=at(1), finished_at=at(300))
    add_statuses(run, [(0, "queued"), (1, "running"), (11, "failed")])
    RunEvent.objects.create(
        run=run,
        seq=90,
        type="run_status",
        data={"type": "run_status", "status": "queued", "action": "retry"},
        created_at=at(290),
    )
    add_statuses(run, [(291, "running"), (300, "completed")], first_seq=91)

    duration = run_duration(run)

    assert duration.until - duration.since == dt.timedelta(seconds=19)  # 10 s + 9 s at work
    assert duration.waited_text == "" and duration.attempts == 2


def test_a_running_run_s_active_time_ticks_from_its_current_spell(
    make_run: Callable[..., Any],
) -> None:
    run = make_run(status="running", started_at=at(1))
    add_statuses(run, [(1, "running"), (6, "failed"), (100, "queued"), (101, "running")])

    duration = run_duration(run)

    assert duration.since == at(96) and duration.until is None  # 5 s before this spell began


def test_a_waiting_run_s_duration_stops_where_the_wait_began(make_run: Callable[..., Any]) -> None:
    run = make_run(status="waiting", started_at=at(1))
    with_request(run)
    add_statuses(run, [(0, "queued"), (1, "running"), (7, "waiting")])
    untouched = make_run(status="running", started_at=at(3))  # no status events: from its start
    spans = run_durations([run, untouched])
    assert spans[run.pk].since == at(1) and spans[run.pk].until == at(7)
    assert spans[run.pk].waiting_since == at(7) and spans[run.pk].waited_text == ""
    assert spans[untouched.pk].since == at(3) and spans[untouched.pk].until is None


def test_the_runs_list_counts_only_the_time_at_work(
    client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    run = make_run(status="completed", started_at=at(1), finished_at=at(80))
    with_request(run)
    add_statuses(
        run, [(1, "running"), (5, "waiting"), (65, "queued"), (66, "running"), (80, "completed")]
    )
    html = client_as("Viewer").get("/").content.decode()
    cell = re.search(r'<td data-label="Duration"[^>]*>.*?</td>', html, re.DOTALL)
    assert cell is not None and "not counted: 1 min 00 s waiting for approval" in cell[0]
    assert f'data-duration-since="{at(62).isoformat()}"' in cell[0]
    assert "+ 1 min 00 s waiting" in cell[0]


# ------------------------------------------------------------------------ times in sentences


def test_ago_and_duration_text_read_like_the_page_s_own() -> None:
    now = timezone.now()
    assert ago(now, now) == "just now"
    assert ago(now - dt.timedelta(seconds=40), now) == "40 seconds ago"
    assert ago(now - dt.timedelta(seconds=61), now) == "1 minute ago"
    assert ago(now - dt.timedelta(minutes=150), now) == "2 hours ago"
    assert ago(now - dt.timedelta(days=3), now) == "3 days ago"
    assert ago(None) == "earlier"
    assert duration_text(dt.timedelta(seconds=4)) == "4 s"
    assert duration_text(dt.timedelta(seconds=125)) == "2 min 05 s"
    assert duration_text(dt.timedelta(hours=1, minutes=2)) == "1 h 02 min"
    assert duration_text(dt.timedelta(days=3, hours=4, minutes=5)) == "3 d 4 h"


@pytest.mark.parametrize("component", ["time.html", "status_pill.html", "decision.html"])
def test_inline_components_add_no_space_before_the_punctuation_that_follows(
    component: str,
) -> None:
    source = (TEMPLATES / "components" / component).read_text()
    assert not source.endswith("\n"), f"{component} ends with a newline: 'ago .' on the page"
    assert "{% endcomment %}\n" not in source, f"{component} starts its output with a newline"


def test_a_relative_time_is_followed_by_its_period() -> None:
    html = render_to_string(
        "dashboard/run_detail.html#outcome",
        {"run": WorkflowRun(status=RunStatus.CANCELLED, finished_at=timezone.now())},
    )
    assert re.search(r"This run was cancelled <time [^>]*>[^<]*</time>\. Resume it", html), html


def test_a_toast_is_escaped_and_an_error_one_is_an_alert() -> None:
    html = render_to_string("base.html#toast_oob", {"text": "<b>late</b>", "level": "error"})
    assert html.startswith(
        '<div hx-swap-oob="beforeend:#toasts"><div class="toast toast-error" role="alert">'
    )
    assert "&lt;b&gt;late&lt;/b&gt;" in html and 'class="toast-close" data-dismiss' in html
