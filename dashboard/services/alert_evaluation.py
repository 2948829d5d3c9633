"""Evaluating alert rules: open an incident where a rule's condition now holds, resolve those
where it no longer does (the ``evaluate-alerts`` periodic job calls ``alerts_evaluate``).

Each condition is a query over the rows it concerns, filtered in SQL and capped per pass, so
a pass costs a few queries per rule however many runs there are:

* run failed: the run's status is failed (runs that failed before the rule existed are left
  alone, or a new rule would page about last year);
* run stuck: running, and nothing recorded in its event log (superstep started or completed,
  executor invoked, status change...) for N minutes;
* run slower than N minutes: unfinished N minutes after it was created;
* approval waiting longer than N minutes: a pending request raised more than N minutes ago;
* retention failing: the last finished run of the ``prune-checkpoints`` job recorded an error;
* run cost above X: the run's cost (its column, which each superstep's commit adds its model
  calls to) is above X; runs that ended before the rule existed are left alone, and a run is
  alerted about once: a run the rule has had an incident about, open or resolved, is not
  found again (its cost only grows, so the incident stays open until the rule changes or the
  run is deleted).

Once per incident, however many processes evaluate at once: an incident is inserted in its own
transaction, together with its notifications and audit entry, and the partial unique index
``alert_incident_open_once`` refuses a second open incident for the same rule and subject, so
the process that loses the race writes (and sends) nothing. Resolving is one conditional UPDATE
(``resolved_at`` still empty), which only one process can win. The condition is checked again
inside the opening transaction, so a process that read a stale list does not open an incident
that another just resolved.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from dashboard.access import audit
from dashboard.catalog.periodic_jobs import PERIODIC_JOBS
from dashboard.models import (
    TERMINAL_RUN_STATUSES,
    AlertCondition,
    AlertIncident,
    AlertRule,
    ApprovalRequest,
    ApprovalStatus,
    PeriodicJobRun,
    RunEvent,
    RunStatus,
    WorkflowRun,
)
from dashboard.services.alert_notifications import alert_notify, incident_changed
from dashboard.services.common import now

__all__ = ["EvaluationReport", "alerts_evaluate", "holding_subjects"]

# Per pass: incidents opened per rule, open incidents checked, rules evaluated. What is left
# over waits for the next pass, a few seconds later.
OPEN_PER_RULE = 50
CHECK_BATCH = 500
RULE_LIMIT = 200
RETENTION_JOB = PERIODIC_JOBS["prune-checkpoints"].name
UNFINISHED = [status for status in RunStatus.values if status not in TERMINAL_RUN_STATUSES]


@dataclasses.dataclass(frozen=True)
class Finding:
    """A subject a rule's condition holds for: what an incident would be opened about."""

    subject: str
    summary: str
    run_id: uuid.UUID | None = None
    workflow_name: str = ""
    details: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class EvaluationReport:
    opened: list[int] = dataclasses.field(default_factory=list)
    resolved: list[int] = dataclasses.field(default_factory=list)

    def as_dict(self) -> dict[str, list[int]]:
        return {"opened": self.opened, "resolved": self.resolved}


def alerts_evaluate(*, at: dt.datetime | None = None) -> EvaluationReport:
    """One pass: resolve what cleared, then open what holds. Returns the incidents this call
    opened and resolved (those another process did are not among them)."""
    moment = at or now()
    report = EvaluationReport()
    report.resolved = _resolve_cleared(moment)
    for rule in AlertRule.objects.filter(enabled=True).order_by("pk")[:RULE_LIMIT]:
        for finding in _findings(rule, moment):
            incident = _open(rule, finding, moment)
            if incident is not None:
                report.opened.append(incident.pk)
    return report


# ------------------------------------------------------------------------------ conditions


def _runs(rule: AlertRule, moment: dt.datetime) -> QuerySet[WorkflowRun]:
    """The runs the rule's condition holds for now."""
    runs = WorkflowRun.objects.all()
    if rule.workflow_name:
        runs = runs.filter(workflow_name=rule.workflow_name)
    limit = moment - dt.timedelta(minutes=rule.threshold_minutes or 0)
    if rule.condition == AlertCondition.RUN_FAILED:
        return runs.filter(status=RunStatus.FAILED, finished_at__gte=rule.created_at)
    if rule.condition == AlertCondition.RUN_SLOW:
        return runs.filter(status__in=UNFINISHED, created_at__lt=limit)
    if rule.condition == AlertCondition.RUN_COST:
        return runs.filter(cost__gt=rule.threshold_cost).filter(
            Q(finished_at__isnull=True) | Q(finished_at__gte=rule.created_at)
        )
    # Stuck: the run row counts its events, so the latest is one index lookup per run.
    latest_event = RunEvent.objects.filter(run=OuterRef("pk"), seq=OuterRef("last_event_seq"))
    return (
        runs.filter(status=RunStatus.RUNNING)
        .annotate(
            last_activity=Coalesce(
                Subquery(latest_event.values("created_at")[:1]),
                "started_at",
                "created_at",
                output_field=DateTimeField(),
            )
        )
        .filter(last_activity__lt=limit)
    )


def _approvals(rule: AlertRule, moment: dt.datetime) -> QuerySet[ApprovalRequest]:
    limit = moment - dt.timedelta(minutes=rule.threshold_minutes or 0)
    requests = ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING, created_at__lt=limit)
    if rule.workflow_name:
        requests = requests.filter(run__workflow_name=rule.workflow_name)
    return requests


def _retention_error() -> str:
    last = (
        PeriodicJobRun.objects.filter(job=RETENTION_JOB, finished_at__isnull=False)
        .order_by("-period")
        .values_list("error", flat=True)
        .first()
    )
    return last or ""


def holding_subjects(rule: AlertRule, subjects: list[str], moment: dt.datetime) -> set[str]:
    """Which of ``subjects`` the rule's condition still holds for at ``moment``."""
    if rule.condition == AlertCondition.RETENTION_FAILING:
        return {RETENTION_JOB} & set(subjects) if _retention_error() else set()
    if rule.condition == AlertCondition.APPROVAL_WAITING:
        found = _approvals(rule, moment).filter(request_id__in=subjects)
        return set(found.values_list("request_id", flat=True))
    ids = [uuid.UUID(subject) for subject in subjects]
    return {str(pk) for pk in _runs(rule, moment).filter(pk__in=ids).values_list("pk", flat=True)}


def _open_incidents(rule: AlertRule) -> QuerySet[AlertIncident]:
    return AlertIncident.objects.filter(rule=rule, resolved_at__isnull=True)


def _findings(rule: AlertRule, moment: dt.datetime) -> list[Finding]:
    """Subjects the condition holds for and no open incident of the rule covers yet."""
    if rule.condition == AlertCondition.RETENTION_FAILING:
        error = _retention_error()
        if not error or _open_incidents(rule).filter(subject=RETENTION_JOB).exists():
            return []
        return [Finding(RETENTION_JOB, "Retention is failing", details={"error": error[:500]})]
    if rule.condition == AlertCondition.APPROVAL_WAITING:
        covered = _open_incidents(rule).filter(subject=OuterRef("request_id"))
        requests = (
            _approvals(rule, moment)
            .exclude(Exists(covered))
            .order_by("created_at")
            .values_list("request_id", "run_id", "run__workflow_name", "executor_id", "created_at")
        )
        return [
            Finding(
                request_id,
                f"Approval for {executor} in {workflow} waiting since {created:%Y-%m-%d %H:%M} UTC",
                run_id,
                workflow,
                {"request_id": request_id, "executor_id": executor},
            )
            for request_id, run_id, workflow, executor, created in requests[:OPEN_PER_RULE]
        ]
    # NOT IN, not a correlated NOT EXISTS: PostgreSQL hashes the rule's open run ids once,
    # where a fresh table without statistics tempts it into a nested loop per run.
    # (run_id IS NOT NULL: one NULL in a NOT IN list would exclude every run.)
    # Run cost above alerts once per run: its resolved incidents cover the run too.
    incidents = (
        AlertIncident.objects.filter(rule=rule)
        if rule.condition == AlertCondition.RUN_COST
        else _open_incidents(rule)
    )
    covered_runs = incidents.filter(run__isnull=False).values("run_id")
    runs = (
        _runs(rule, moment)
        .exclude(pk__in=covered_runs)
        .order_by("created_at")
        .values_list("pk", "workflow_name", "status", "error_message", "cost")
    )
    return [
        Finding(
            str(pk),
            _run_summary(rule, workflow, pk, cost),
            pk,
            workflow,
            {"status": status, "error": error[:500]} if error else _run_details(rule, status, cost),
        )
        for pk, workflow, status, error, cost in runs[:OPEN_PER_RULE]
    ]


def _run_details(rule: AlertRule, status: str, cost: Decimal) -> dict[str, Any]:
    if rule.condition == AlertCondition.RUN_COST:
        return {"status": status, "cost": str(cost)}
    return {"status": status}


def _run_summary(rule: AlertRule, workflow: str, run_id: uuid.UUID, cost: Decimal) -> str:
    run = f"Run {str(run_id)[:8]} of {workflow}"
    return {
        AlertCondition.RUN_FAILED: f"{run} failed",
        AlertCondition.RUN_STUCK: f"{run} made no progress for {rule.threshold_minutes} min",
        AlertCondition.RUN_SLOW: f"{run} still unfinished after {rule.threshold_minutes} min",
        AlertCondition.RUN_COST: (
            f"{run} cost {cost.normalize():f}, above {rule.threshold_cost_text}"
        ),
    }[AlertCondition(rule.condition)]


# ------------------------------------------------------------------------------ open, resolve


def _open(rule: AlertRule, finding: Finding, moment: dt.datetime) -> AlertIncident | None:
    with transaction.atomic():
        if finding.subject not in holding_subjects(rule, [finding.subject], moment):
            return None
        try:
            with transaction.atomic():
                incident = AlertIncident.objects.create(
                    rule=rule,
                    subject=finding.subject,
                    run_id=finding.run_id,
                    workflow_name=finding.workflow_name,
                    summary=finding.summary[:500],
                    details=finding.details,
                    opened_at=moment,
                    checked_at=moment,
                )
        except IntegrityError:  # another process opened it a moment ago: it notifies
            return None
        audit.record(
            None,
            "alert_opened",
            run=incident.run,
            target=f"alert {rule.name}"[:300],
            details={"incident": incident.pk, "summary": incident.summary},
        )
        alert_notify(incident, "alert_opened")
        incident_changed(incident)
    return incident


def _resolve_cleared(moment: dt.datetime) -> list[int]:
    """Check the open incidents checked longest ago; resolve those whose condition cleared."""
    batch = list(
        AlertIncident.objects.filter(resolved_at__isnull=True)
        .select_related("rule", "run")
        .order_by("checked_at", "pk")[:CHECK_BATCH]
    )
    by_rule: dict[int, list[AlertIncident]] = {}
    for incident in batch:
        by_rule.setdefault(incident.rule_id, []).append(incident)
    resolved: list[int] = []
    still: list[int] = []
    for incidents in by_rule.values():
        rule = incidents[0].rule
        holding = (
            holding_subjects(rule, [i.subject for i in incidents], moment)
            if rule.enabled
            else set()
        )
        for incident in incidents:
            if incident.subject in holding:
                still.append(incident.pk)
            elif _resolve(incident, moment, _resolution(rule)):
                resolved.append(incident.pk)
    AlertIncident.objects.filter(pk__in=still).update(checked_at=moment)
    return resolved


def _resolution(rule: AlertRule) -> str:
    if not rule.enabled:
        return "The rule was disabled."
    return {
        AlertCondition.RUN_FAILED: "The run is no longer failed (retried, resumed or deleted).",
        AlertCondition.RUN_STUCK: "The run made progress again, or stopped running.",
        AlertCondition.RUN_SLOW: "The run finished.",
        AlertCondition.APPROVAL_WAITING: "The request was decided or cancelled.",
        AlertCondition.RETENTION_FAILING: "The retention job ran without an error.",
        AlertCondition.RUN_COST: (
            "The run no longer costs more than the rule's threshold (the rule was changed), "
            "or it was deleted."
        ),
    }[AlertCondition(rule.condition)]


def _resolve(incident: AlertIncident, moment: dt.datetime, resolution: str) -> bool:
    with transaction.atomic():
        won = AlertIncident.objects.filter(pk=incident.pk, resolved_at__isnull=True).update(
            resolved_at=moment, resolution=resolution, checked_at=moment
        )
        if not won:
            return False
        incident.resolved_at, incident.resolution = moment, resolution
        audit.record(
            None,
            "alert_resolved",
            run=incident.run,
            target=f"alert {incident.rule.name}"[:300],
            details={"incident": incident.pk, "resolution": resolution},
        )
        if incident.rule.notify_resolved and incident.rule.enabled:
            alert_notify(incident, "alert_resolved")
        incident_changed(incident)
    return True
