"""An alert-evaluating process for the alert tests: evaluates alert rules against the database
of ``DATABASE_URL`` (production settings, embedded mode) and delivers what it opened. Prints
one JSON value on its last line::

    python alert_driver.py seed N HOOK_URL  # a rule telling HOOK_URL (webhook and Slack) about
                                            #   failed runs, and N failed runs
    python alert_driver.py evaluate         # "ready", then on a line from stdin evaluates (no
                                            #   period claim: this process really evaluates),
                                            #   delivers -> {"opened": n}
    python alert_driver.py count            # incidents, notifications sent, alert_opened entries

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import django

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def seed(count: str, hook_url: str) -> dict[str, int]:
    from django.utils import timezone

    from dashboard.models import RunStatus, WorkflowRun
    from dashboard.services import alerts

    spec = alerts.AlertRuleSpec(
        name="failures",
        condition="run_failed",
        webhook_url=f"{hook_url}/webhook",
        webhook_secret=SECRET,
        slack_webhook_url=f"{hook_url}/slack",
        notify_resolved=False,
    )
    alerts.alert_rule_create(spec)
    moment = timezone.now()
    WorkflowRun.objects.bulk_create(
        WorkflowRun(
            workflow_name="squares",
            status=RunStatus.FAILED,
            error_message=f"boom {index}",
            created_at=moment,
            started_at=moment,
            finished_at=moment,
        )
        for index in range(int(count))
    )
    return {"failed": WorkflowRun.objects.filter(status=RunStatus.FAILED).count()}


def evaluate() -> dict[str, int]:
    from django.db import connection

    from dashboard.execution import embedded
    from dashboard.services import alert_evaluation

    connection.ensure_connection()  # connected before the start line, not racing to connect
    print("ready", flush=True)
    sys.stdin.readline()
    # Several passes, as the job every 15 s would: none may open an incident again.
    opened = sum(len(alert_evaluation.alerts_evaluate().opened) for _ in range(3))
    assert embedded.wait_for_background_tasks(60), "deliveries did not finish in 60 s"
    return {"opened": opened}


def count() -> dict[str, int]:
    from dashboard.models import AlertIncident, AuditEntry, Notification

    return {
        "incidents": AlertIncident.objects.count(),
        "sent": Notification.objects.filter(sent_at__isnull=False).count(),
        "unsent": Notification.objects.filter(sent_at__isnull=True).count(),
        "opened_entries": AuditEntry.objects.filter(action="alert_opened").count(),
    }


COMMANDS: dict[str, Any] = {"seed": seed, "evaluate": evaluate, "count": count}

if __name__ == "__main__":
    django.setup()
    command, *arguments = sys.argv[1:]
    print(json.dumps(COMMANDS[command](*arguments)), flush=True)
