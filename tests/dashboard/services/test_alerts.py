"""Alerts (dashboard/services/alerts.py, services/alert_evaluation.py, the ``evaluate-alerts``
job, the pages): each condition opens one incident, told once to email, Slack and the signed
webhook with a link to the run, resolved when it clears; per-workflow rules; validation,
roles and the audit log; the run page's alerts card; and once per incident when threads and
two processes evaluate the same rules against one PostgreSQL database at the same moment.

Service tests run on SQLite and PostgreSQL (``services_db``); their transaction never commits,
so nothing is delivered in the background: a test delivers the rows itself
(``notifications.deliver``), as the Celery task does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import psycopg
import pytest
from django.core import mail
from django.db import connections
from django.test import Client, override_settings
from django.utils import timezone
from standardwebhooks import Webhook

from dashboard.core.errors import Forbidden, InvalidInput
from dashboard.models import (
    AlertIncident,
    ApprovalRequest,
    AuditEntry,
    Checkpoint,
    Notification,
    PeriodicJobRun,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.notifications import delivery as notifications
from dashboard.notifications import tasks as alert_tasks
from dashboard.services import alert_evaluation, alerts
from tests.helpers.stack import HERE, answers, free_port, production_env, wait_for

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
BASE = "https://superstep.example"


class Receiver:
    """A local HTTP receiver standing in for Slack and a webhook endpoint: records each POST
    (path, headers, body) and answers 200, at once unless a test clears ``answering`` (then
    each POST waits, recorded, until it is set again)."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        self.answering = threading.Event()
        self.answering.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.posts.append((self.path, dict(self.headers), body))
                receiver.answering.wait(30)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [json.loads(body) for got, _, body in self.posts if got == path]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


@pytest.fixture
def outbox() -> Iterator[list[Any]]:
    with override_settings(
        MAILERS={"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}},
        SUPERSTEP_BASE_URL=BASE,
    ):
        mail.outbox = []
        yield mail.outbox


def rule_spec(**changes: Any) -> alerts.AlertRuleSpec:
    fields: dict[str, Any] = {
        "name": "failures",
        "condition": "run_failed",
        "emails": "ops@example.com",
    }
    return alerts.AlertRuleSpec(**{**fields, **changes})


def make_rule(**changes: Any) -> Any:
    return alerts.alert_rule_create(rule_spec(**changes))


def ago(minutes: float) -> dt.datetime:
    return timezone.now() - dt.timedelta(minutes=minutes)


def deliver_all() -> list[int]:
    """Deliver every unsent notification, as the Celery task does after commit."""
    due = list(Notification.objects.filter(sent_at__isnull=True).values_list("pk", flat=True))
    return [pk for pk in due if notifications.deliver(pk)]


def actions() -> list[str]:
    return list(
        AuditEntry.objects.filter(action__startswith="alert_")
        .order_by("pk")
        .values_list("action", flat=True)
    )


# ------------------------------------------------------------------------------ conditions


def test_a_failed_run_opens_one_incident_told_once_to_email_slack_and_the_signed_webhook(
    services_db: str, make_run: Callable[..., Any], receiver: Receiver, outbox: list[Any]
) -> None:
    make_rule(
        slack_webhook_url=f"{receiver.url}/slack",
        webhook_url=f"{receiver.url}/hook",
        webhook_secret=SECRET,
    )
    run = make_run(
        status="failed",
        workflow_name="squares",
        error_message="division by zero",
        created_at=timezone.now(),
    )

    first = alert_evaluation.alerts_evaluate()
    second = alert_evaluation.alerts_evaluate()
    assert len(deliver_all()) == 3
    assert deliver_all() == []  # sent ones are never sent again

    (incident,) = AlertIncident.objects.all()
    assert first.opened == [incident.pk] and second.opened == []
    assert incident.run_id == run.pk and incident.state == "delivered"
    link = f"{BASE}/runs/{run.pk}/"
    (email,) = outbox
    assert email.to == ["ops@example.com"] and email.subject.startswith("[Superstep] Alert: Run ")
    assert link in email.body
    (slack,) = receiver.bodies("/slack")
    assert set(slack) == {"text"} and f"<{link}|Open in Superstep>" in slack["text"]
    ((_, headers, body),) = [post for post in receiver.posts if post[0] == "/hook"]
    Webhook(SECRET).verify(body, headers)  # raises unless signed with the rule's secret
    sent = json.loads(body)
    assert sent["event"] == "alert_opened" and sent["url"] == link and sent["run_id"] == str(run.pk)
    assert actions() == [
        "alert_rule_create",
        "alert_opened",
        "alert_delivered",
        "alert_delivered",
        "alert_delivered",
    ]
    assert AuditEntry.objects.filter(action="alert_opened", run_id=run.pk).count() == 1


def test_runs_that_failed_before_the_rule_existed_are_left_alone(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    make_run(status="failed", created_at=ago(60), finished_at=ago(59))
    make_rule()

    assert alert_evaluation.alerts_evaluate().opened == []


def _stuck_run(make_run: Callable[..., Any]) -> WorkflowRun:
    run = make_run(status="running", created_at=ago(60), last_event_seq=1)
    RunEvent.objects.create(run=run, seq=1, type="superstep_started", data={}, created_at=ago(30))
    return run


def _progress(run: WorkflowRun) -> None:
    RunEvent.objects.create(run=run, seq=2, type="superstep_completed", data={})
    WorkflowRun.objects.filter(pk=run.pk).update(last_event_seq=2)


def _finish(run: WorkflowRun) -> None:
    WorkflowRun.objects.filter(pk=run.pk).update(
        status=RunStatus.COMPLETED, finished_at=timezone.now()
    )


def _waiting_request(make_run: Callable[..., Any]) -> ApprovalRequest:
    run = make_run(status="waiting", created_at=ago(60))
    checkpoint = Checkpoint.objects.create(
        checkpoint_id=f"cp-{run.pk}",
        run=run,
        engine_run_id=run.engine_run_id,
        workflow_name=run.workflow_name,
        superstep=1,
        graph_signature_hash="g",
        document={},
        size_bytes=2,
    )
    return ApprovalRequest.objects.create(
        request_id=f"{run.engine_run_id}:r1",
        engine_request_id="r1",
        engine_run_id=run.engine_run_id,
        run=run,
        checkpoint=checkpoint,
        executor_id="gate",
        created_at=ago(45),
    )


def _decide(request: ApprovalRequest) -> None:
    ApprovalRequest.objects.filter(pk=request.pk).update(
        status="cancelled", decided_at=timezone.now()
    )


def _retention_failed(make_run: Callable[..., Any]) -> None:
    PeriodicJobRun.objects.create(
        job="prune-checkpoints",
        period=1,
        finished_at=timezone.now(),
        error="OperationalError: disk full",
    )


def _retention_ran(_: object) -> None:
    PeriodicJobRun.objects.create(job="prune-checkpoints", period=2, finished_at=timezone.now())


CONDITIONS = {
    # condition: (threshold, make the subject, clear the condition, summary fragment)
    "run_stuck": (10, _stuck_run, _progress, "made no progress for 10 min"),
    "run_slow": (
        30,
        lambda make_run: make_run(status="running", created_at=ago(45)),
        _finish,
        "still unfinished after 30 min",
    ),
    "approval_waiting": (
        30,
        _waiting_request,
        _decide,
        "Approval for gate in squares waiting since",
    ),
    "retention_failing": (None, _retention_failed, _retention_ran, "Retention is failing"),
}


@pytest.mark.parametrize("condition", sorted(CONDITIONS))
def test_each_condition_opens_one_incident_and_resolves_it_when_it_clears(
    services_db: str, make_run: Callable[..., Any], outbox: list[Any], condition: str
) -> None:
    threshold, make_subject, clear, summary = CONDITIONS[condition]
    make_rule(condition=condition, threshold_minutes=threshold)
    subject = make_subject(make_run)

    opened = alert_evaluation.alerts_evaluate()
    assert alert_evaluation.alerts_evaluate().opened == []
    deliver_all()
    clear(subject)
    resolved = alert_evaluation.alerts_evaluate()
    deliver_all()

    (incident,) = AlertIncident.objects.all()
    assert opened.opened == [incident.pk] == resolved.resolved and resolved.opened == []
    assert summary in incident.summary and incident.state == "resolved" and incident.resolution
    assert [m.subject.split(":")[0] for m in outbox] == [
        "[Superstep] Alert",
        "[Superstep] Resolved",
    ]
    assert actions()[1:] == ["alert_opened", "alert_delivered", "alert_resolved", "alert_delivered"]


def test_a_condition_that_holds_again_after_it_cleared_is_a_new_incident(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    make_rule(condition="run_stuck", threshold_minutes=10)
    run = _stuck_run(make_run)
    alert_evaluation.alerts_evaluate()
    _progress(run)
    alert_evaluation.alerts_evaluate()
    RunEvent.objects.filter(run=run, seq=2).update(created_at=ago(20))

    again = alert_evaluation.alerts_evaluate()

    assert len(again.opened) == 1
    assert [i.state for i in AlertIncident.objects.order_by("pk")] == ["resolved", "opened"]


def test_a_stuck_run_is_not_one_while_it_records_events(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    make_rule(condition="run_stuck", threshold_minutes=10)
    run = make_run(status="running", created_at=ago(60), last_event_seq=1)
    RunEvent.objects.create(run=run, seq=1, type="superstep_started", data={}, created_at=ago(2))

    assert alert_evaluation.alerts_evaluate().opened == []


def test_no_resolved_notification_unless_the_rule_asks_for_it(
    services_db: str, make_run: Callable[..., Any], outbox: list[Any]
) -> None:
    make_rule(condition="run_slow", threshold_minutes=5, notify_resolved=False)
    run = make_run(status="running", created_at=ago(10))
    alert_evaluation.alerts_evaluate()
    _finish(run)
    alert_evaluation.alerts_evaluate()
    deliver_all()

    assert [m.subject.split(":")[0] for m in outbox] == ["[Superstep] Alert"]
    assert AlertIncident.objects.get().state == "resolved"


def test_a_rule_for_one_workflow_ignores_the_others(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    make_rule(workflow_name="squares")
    mine = make_run(status="failed", workflow_name="squares", created_at=timezone.now())
    make_run(status="failed", workflow_name="return-replace", created_at=timezone.now())

    alert_evaluation.alerts_evaluate()

    assert list(AlertIncident.objects.values_list("run_id", flat=True)) == [mine.pk]


def test_a_deleted_run_resolves_its_incident(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    make_rule()
    run = make_run(status="failed", created_at=timezone.now())
    alert_evaluation.alerts_evaluate()
    run.delete()

    assert len(alert_evaluation.alerts_evaluate().resolved) == 1


def test_disabling_a_rule_resolves_its_incidents_without_telling_anyone(
    services_db: str, make_run: Callable[..., Any], admin_role_user: Any
) -> None:
    rule = make_rule()
    make_run(status="failed", created_at=timezone.now())
    alert_evaluation.alerts_evaluate()
    alerts.alert_rule_update(rule.pk, rule_spec(enabled=False), user=admin_role_user)

    report = alert_evaluation.alerts_evaluate()

    assert len(report.resolved) == 1 and report.opened == []
    assert AlertIncident.objects.get().resolution == "The rule was disabled."
    assert list(Notification.objects.values_list("event", flat=True)) == ["alert_opened"]


def test_the_periodic_task_evaluates_once_per_period(
    services_db: str, make_run: Callable[..., Any]
) -> None:
    make_rule()
    make_run(status="failed", created_at=timezone.now())

    first = alert_tasks.evaluate_alerts()
    second = alert_tasks.evaluate_alerts()

    assert len(first["opened"]) == 1 and second == {"opened": [], "resolved": []}


def test_a_pass_opens_a_bounded_number_per_rule(
    services_db: str, make_run: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(alert_evaluation, "OPEN_PER_RULE", 2)
    make_rule()
    for _ in range(3):
        make_run(status="failed", created_at=timezone.now())

    assert [len(alert_evaluation.alerts_evaluate().opened) for _ in range(3)] == [2, 1, 0]


# ------------------------------------------------------------------------------ rules


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"name": ""}, "name"),
        ({"condition": "sometimes"}, "condition"),
        ({"condition": "run_slow"}, "threshold_minutes"),
        ({"condition": "run_slow", "threshold_minutes": 0}, "threshold_minutes"),
        ({"condition": "run_stuck", "threshold_minutes": 10**7}, "threshold_minutes"),
        ({"threshold_minutes": 5}, "threshold_minutes"),
        ({"workflow_name": "nope"}, "workflow_name"),
        ({"condition": "retention_failing", "workflow_name": "squares"}, "workflow_name"),
        ({"emails": "ops@example.com\nnot-an-address"}, "emails"),
        ({"emails": ""}, "emails"),
        ({"slack_webhook_url": "javascript:alert(1)"}, "slack_webhook_url"),
        ({"webhook_url": "ftp://example.com/hook"}, "webhook_url"),
        ({"webhook_url": "https://example.com/" + "x" * 600}, "webhook_url"),
        ({"webhook_secret": "whsec_not base64!"}, "webhook_secret"),
        ({"webhook_secret": "nul\x00"}, "webhook_secret"),
    ],
)
def test_alert_rule_create_refuses_bad_fields_by_name(
    services_db: str, admin_role_user: Any, changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        alerts.alert_rule_create(rule_spec(**changes), user=admin_role_user)

    assert field in refused.value.errors, refused.value.errors
    assert refused.value.status == 400


def test_rules_are_created_changed_and_deleted_by_admins_and_audited(
    services_db: str, admin_role_user: Any
) -> None:
    rule = alerts.alert_rule_create(
        rule_spec(slack_webhook_url="https://hooks.slack.com/services/T0/B0/secret-token"),
        user=admin_role_user,
    )
    alerts.alert_rule_update(
        rule.pk,
        rule_spec(name="failures", emails="a@example.com, b@example.com"),
        user=admin_role_user,
    )
    alerts.alert_rule_delete(rule.pk, user=admin_role_user)

    entries = list(AuditEntry.objects.filter(action__startswith="alert_rule").order_by("pk"))
    assert [(e.action, e.actor_name) for e in entries] == [
        ("alert_rule_create", "ada"),
        ("alert_rule_update", "ada"),
        ("alert_rule_delete", "ada"),
    ]
    assert entries[1].details["after"]["emails"] == ["a@example.com", "b@example.com"]
    assert "secret-token" not in json.dumps(
        [e.details for e in entries]
    )  # the Slack URL is a credential


@pytest.mark.parametrize("role", ["Viewer", "Operator", "Approver"])
def test_only_admins_manage_alert_rules_and_refusals_are_recorded(
    services_db: str, role_user: Callable[..., Any], role: str
) -> None:
    user = role_user("someone", role)

    with pytest.raises(Forbidden):
        alerts.alert_rule_create(rule_spec(), user=user)

    assert AuditEntry.objects.filter(action="alert_change", outcome=AuditEntry.DENIED).count() == 1


# ------------------------------------------------------------------------------ pages


def form(**changes: Any) -> dict[str, Any]:
    return {
        "name": "slow ones",
        "condition": "run_slow",
        "threshold_minutes": "30",
        "workflow_name": "squares",
        "emails": "ops@example.com",
        "notify_resolved": "on",
        "enabled": "on",
        **changes,
    }


def test_the_form_saves_a_rule_and_the_page_lists_it_with_its_open_incidents(
    services_db: str, client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    admin = client_as("Admin")
    answer = admin.post("/alerts/new/", form())
    assert answer.status_code == 302 and answer.url == "/alerts/"
    run = make_run(status="running", created_at=ago(45))
    alert_evaluation.alerts_evaluate()

    page = admin.get("/alerts/").content.decode()

    assert 'data-alert-rule="slow ones"' in page and "Run slower than 30 min" in page
    assert f'href="/runs/{run.pk}/"' in page and 'data-alert-state="opened"' in page


def test_the_form_answers_422_with_the_refusal_beside_its_field(
    services_db: str, client_as: Callable[..., Client]
) -> None:
    answer = client_as("Admin").post("/alerts/new/", form(webhook_url="gopher://x"))

    assert answer.status_code == 422
    assert "An http:// or https:// URL" in answer.content.decode()


def test_editing_and_deleting_through_the_pages(
    services_db: str, client_as: Callable[..., Client]
) -> None:
    admin = client_as("Admin")
    rule = make_rule()
    assert admin.get(f"/alerts/{rule.pk}/edit/").status_code == 200
    assert (
        admin.post(
            f"/alerts/{rule.pk}/edit/",
            form(name="failures", condition="run_failed", threshold_minutes=""),
        ).status_code
        == 302
    )
    assert admin.post(f"/alerts/{rule.pk}/delete/").status_code == 302
    assert admin.get("/alerts/999/edit/").status_code == 404


@pytest.mark.parametrize("role", ["Viewer", "Operator"])
def test_other_roles_get_403_from_the_alert_pages(
    services_db: str, client_as: Callable[..., Client], role: str
) -> None:
    client = client_as(role)
    rule = make_rule()

    assert client.get("/alerts/").status_code == 403
    assert client.post("/alerts/new/", form()).status_code == 403
    assert client.post(f"/alerts/{rule.pk}/delete/").status_code == 403
    assert "/alerts/" not in client.get("/").content.decode()  # no nav link either
    assert AuditEntry.objects.filter(outcome=AuditEntry.DENIED).count() == 3


def test_the_run_page_shows_the_runs_alerts(
    services_db: str, client_as: Callable[..., Client], make_run: Callable[..., Any]
) -> None:
    make_rule()
    run = make_run(status="failed", created_at=timezone.now())
    alert_evaluation.alerts_evaluate()

    page = client_as("Viewer").get(f"/runs/{run.pk}/").content.decode()

    assert 'id="run-alerts"' in page and "failures" in page and 'data-alert-state="opened"' in page


# ------------------------------------------------------------------------------ concurrency


def test_threads_evaluating_at_once_open_and_tell_each_incident_once(
    services_postgres_transactional_db: str, make_run: Callable[..., Any]
) -> None:
    make_rule()
    runs = [make_run(status="failed", created_at=timezone.now()) for _ in range(5)]
    barrier = threading.Barrier(4)
    opened: list[list[int]] = []

    def evaluate() -> None:
        try:
            barrier.wait(10)
            opened.append(alert_evaluation.alerts_evaluate().opened)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=evaluate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert sum(len(ids) for ids in opened) == len(runs)
    assert AlertIncident.objects.count() == len(runs)
    assert Notification.objects.filter(event="alert_opened").count() == len(runs)
    assert AuditEntry.objects.filter(action="alert_opened").count() == len(runs)


DRIVER = HERE / "alert_driver.py"
FAILED_RUNS = 20


@pytest.fixture
def own_database(
    migrated_postgres: Callable[[str], contextlib.AbstractContextManager[str]],
) -> Iterator[str]:
    """A migrated database of this test's own, where only its failed runs are counted."""
    with migrated_postgres("superstep_alerts") as url:
        yield url


@pytest.mark.slow
@pytest.mark.postgres
def test_two_processes_evaluating_at_once_deliver_each_incident_once(
    own_database: str, subprocess_env: Callable[..., dict[str, str]], receiver: Receiver
) -> None:
    # Two evaluating processes (as two servers' threads, or two beats) with their own
    # connections, released at one instant onto the same failed runs; each delivers what it
    # opened to the receiver here.
    env = production_env(subprocess_env, database_url=own_database, redis_url="")
    env.pop("REDIS_URL")  # embedded mode: each process delivers its notifications itself
    assert _driver(env, "seed", str(FAILED_RUNS), receiver.url) == {"failed": FAILED_RUNS}
    processes = [
        subprocess.Popen(
            [sys.executable, str(DRIVER), "evaluate"],
            cwd=HERE.parents[1],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        ready = [p.stdout.readline().strip() for p in processes if p.stdout is not None]
        assert ready == ["ready", "ready"], [p.stderr.read() for p in processes if p.stderr]
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outputs = [p.communicate(timeout=120) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    assert all(p.returncode == 0 for p in processes), [err[-3000:] for _, err in outputs]
    opened = [json.loads(out.strip().splitlines()[-1])["opened"] for out, _ in outputs]

    hooks = receiver.bodies("/webhook")
    slacks = receiver.bodies("/slack")
    assert sum(opened) == FAILED_RUNS, opened
    assert len(hooks) == len({body["incident_id"] for body in hooks}) == FAILED_RUNS
    assert len({body["run_id"] for body in hooks}) == FAILED_RUNS
    assert len(slacks) == FAILED_RUNS
    for path, headers, body in receiver.posts:
        if path == "/webhook":
            Webhook(SECRET).verify(body, headers)
    assert _driver(env, "count") == {
        "incidents": FAILED_RUNS,
        "sent": 2 * FAILED_RUNS,
        "unsent": 0,
        "opened_entries": FAILED_RUNS,
    }


def _driver(env: dict[str, str], *arguments: str) -> Any:
    result = subprocess.run(
        [sys.executable, str(DRIVER), *arguments],
        cwd=HERE.parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_subjects_are_run_ids_as_text(services_db: str, make_run: Callable[..., Any]) -> None:
    # The resolve pass compares what the database returns with the stored subject.
    rule = make_rule()
    run = make_run(status="failed", created_at=timezone.now())
    alert_evaluation.alerts_evaluate()

    assert AlertIncident.objects.get().subject == str(run.pk)
    assert alert_evaluation.holding_subjects(
        rule, [str(run.pk), str(uuid.uuid4())], timezone.now()
    ) == {str(run.pk)}


SHOW_BASE_URL = (
    "import django, json; django.setup(); from django.conf import settings; "
    "print(json.dumps(settings.SUPERSTEP_BASE_URL))"
)


def _base_url(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SHOW_BASE_URL],
        env=env,
        cwd=HERE.parents[1],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "value, kept",
    [("https://superstep.example.com/", "https://superstep.example.com"), ("", "")],
)
def test_the_base_url_setting_is_kept_without_its_trailing_slash(
    subprocess_env: Callable[..., dict[str, str]], value: str, kept: str
) -> None:
    result = _base_url(subprocess_env(SUPERSTEP_BASE_URL=value))

    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == kept


def test_a_base_url_that_is_not_http_stops_the_process(
    subprocess_env: Callable[..., dict[str, str]],
) -> None:
    result = _base_url(subprocess_env(SUPERSTEP_BASE_URL="superstep.example.com"))

    assert result.returncode != 0
    assert (
        "SUPERSTEP_BASE_URL='superstep.example.com' must start with https:// or http://"
        in result.stderr
    )


@pytest.mark.slow
@pytest.mark.postgres
def test_two_daphne_servers_evaluating_alerts_tell_each_incident_once(
    own_database: str, subprocess_env: Callable[..., dict[str, str]], receiver: Receiver
) -> None:
    """Two web servers, each running the periodic jobs on its own threads (as two embedded
    servers, or servers beside beat, do) over one database: every incident is told once."""
    servers: list[subprocess.Popen[bytes]] = []
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(_stop, servers)
        env = production_env(
            subprocess_env,
            database_url=own_database,
            redis_url="",
            SUPERSTEP_BACKGROUND_SERVICES="1",
        )
        env.pop("REDIS_URL")
        assert _driver(env, "seed", "5", receiver.url) == {"failed": 5}
        urls = []
        for _ in range(2):
            port = free_port()
            servers.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "daphne",
                        "-b",
                        "127.0.0.1",
                        "-p",
                        str(port),
                        "dashboard.config.asgi:application",
                    ],
                    cwd=HERE.parents[1],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            urls.append(f"http://127.0.0.1:{port}")
        for url in urls:
            wait_for(lambda url=url: answers(url), "daphne to answer", lambda: "", timeout=60)
        wait_for(
            lambda: len(receiver.bodies("/webhook")) >= 5,
            "5 incidents told",
            lambda: "",
            timeout=90,
        )
        # Two more evaluation periods with both servers up: nothing is told again.
        told_after = _evaluations(own_database)
        wait_for(
            lambda: _evaluations(own_database) >= told_after + 2,
            "two more evaluation periods",
            lambda: "",
            timeout=60,
        )
        hooks = receiver.bodies("/webhook")
        assert len(hooks) == len({body["incident_id"] for body in hooks}) == 5
        assert len(receiver.bodies("/slack")) == 5
        assert _driver(env, "count") == {
            "incidents": 5,
            "sent": 10,
            "unsent": 0,
            "opened_entries": 5,
        }


def _evaluations(database: str) -> int:
    """How many periods of the alert evaluation have run to their end (in either server)."""
    with psycopg.connect(database, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM dashboard_periodicjobrun"
            " WHERE job = 'evaluate-alerts' AND finished_at IS NOT NULL"
        ).fetchone()
    assert row is not None
    return int(row[0])


def _stop(servers: list[subprocess.Popen[bytes]]) -> None:
    for server in servers:
        server.kill()
        server.wait(10)
