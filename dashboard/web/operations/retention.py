"""Retention for admins (``manage_retention``): every policy with what it keeps, its state, its
last run and what it would delete now; the policy form with a live preview of the draft; "run
now" (dry or real, confirmed with the count the preview gave); the runs on legal hold, with
who held each, put on hold and released here.

Every change goes through the services (``policy_*``, ``checkpoint_prune`` through
``policy_apply``, ``run_hold``), which check the role, validate, and audit. What a policy would
delete is ``retention_preview``'s answer, fetched per policy by htmx after the page shows: it
reads every eligible run, so it must not hold the page (whose own queries are a fixed number).
Refused input answers 4xx with the message beside the field it concerns.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat

from dashboard import services
from dashboard.models import RetentionPolicy
from dashboard.selectors import retention_policies as policies
from dashboard.services import validation
from dashboard.web.access import page_view
from dashboard.web.operations.crud import Crud, forbidden, refusal_status, refused
from dashboard.web.operations.forms import HoldForm, PolicyForm

PAGE = "dashboard/retention.html"
FORM = "dashboard/retention_policy_form.html"
PREVIEW = "dashboard/retention_preview.html"
TEXT = "text/plain; charset=utf-8"
DENIED = "Retention is managed by admins: your role may not see or change policies and holds."


POLICIES = Crud(
    form=PolicyForm,
    create=services.policy_create,
    update=services.policy_update,
    template=FORM,
    record_name="policy",
    saved=lambda policy: f"Policy {policy.name} saved.",
    nav_section="retention",
    section="Retention",
    noun="policy",
    new_title="New retention policy",
    form_id="policy-form",
    list_url="dashboard:retention",
    new_url="dashboard:retention_policy_new",
    edit_url="dashboard:retention_policy_edit",
)


def _refused(request: HttpRequest) -> HttpResponse | None:
    """The page for a role that may not manage retention."""
    return refused(request, "policy_change", lambda: _denied(request, DENIED))


def _forbidden(request: HttpRequest, action: str, target: str) -> HttpResponse | None:
    """Refuse a change before its form is even read."""
    return forbidden(request, action, target, lambda message: _denied(request, message))


def _denied(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, PAGE, {"denied": message, "nav_section": "retention"}, status=403)


def _page(
    request: HttpRequest, *, status: int = 200, error: str = "", hold_form: HoldForm | None = None
) -> HttpResponse:
    if not services.can(request.user, "policy_change"):
        return _denied(request, error or DENIED)
    context = {
        "rows": [(row, _rules(row.policy)) for row in policies.policy_rows()],
        "held": policies.held_runs(),
        "held_limit": policies.HELD_RUNS_LIMIT,
        "hold_form": hold_form or HoldForm(),
        "error": error,
        "nav_section": "retention",
    }
    return render(request, PAGE, context, status=status)


def _rules(policy: RetentionPolicy) -> list[str]:
    """What a policy does, in words."""
    said = []
    if policy.keep_last_checkpoints is not None:
        n = policy.keep_last_checkpoints
        said.append(f"keeps the newest {n} checkpoint{'s' if n != 1 else ''} of each run")
    if policy.delete_checkpoints_older_than_days is not None:
        n = policy.delete_checkpoints_older_than_days
        said.append(f"deletes checkpoints older than {n} day{'s' if n != 1 else ''}")
    if policy.delete_runs_older_than_days is not None:
        n = policy.delete_runs_older_than_days
        said.append(f"deletes whole runs finished more than {n} day{'s' if n != 1 else ''} ago")
    return said


@page_view("GET")
def retention(request: HttpRequest) -> HttpResponse:
    return _refused(request) or _page(request)


@page_view("GET", "POST")
def policy_new(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _refused(request) or POLICIES.new(request)
    return _forbidden(request, "policy_change", "policy (new)") or POLICIES.new(request)


@page_view("GET", "POST")
def policy_edit(request: HttpRequest, policy_id: int) -> HttpResponse:
    if request.method == "GET":
        denied = _refused(request)
    else:
        denied = _forbidden(request, "policy_change", f"policy {policy_id}")
    if denied:
        return denied
    policy = policies.policy_get(policy_id)
    if policy is None:
        return _page(request, status=404, error=f"No retention policy has the id {policy_id}.")
    return POLICIES.edit(request, policy)


@page_view("GET")
def policy_preview(request: HttpRequest, policy_id: int) -> HttpResponse:
    """What a saved policy would delete now, with its run buttons (loaded into its row)."""
    if not services.can(request.user, "policy_change"):
        return HttpResponse(DENIED, status=403, content_type=TEXT)
    policy = policies.policy_get(policy_id)
    if policy is None:
        return HttpResponse("This policy no longer exists.", status=404, content_type=TEXT)
    report = services.retention_preview(policy)
    context = {
        "policy": policy,
        "report": report,
        "dialog_id": f"run-dialog-{policy.pk}",
        "confirm_title": f"Run {policy.name} now?",
        "confirm_message": _confirmation(report),
    }
    return render(request, PREVIEW, context)


def _confirmation(report: services.PruneReport) -> str:
    if not report.checkpoints:
        return "It would delete nothing now; the run is still recorded in the audit log."
    return f"This deletes {_counted(report)} now. It cannot be undone."


def _counted(report: services.PruneReport) -> str:
    runs = report.runs
    whole = f", including {runs} whole run{'s' if runs != 1 else ''}" if runs else ""
    plural = "s" if report.checkpoints != 1 else ""
    return f"{report.checkpoints} checkpoint{plural} ({filesizeformat(report.bytes)}){whole}"


@page_view("POST")
def policy_draft_preview(request: HttpRequest) -> HttpResponse:
    """What the form's draft would delete now (not saved), or why it cannot tell yet."""
    if not services.can(request.user, "policy_change"):
        return HttpResponse(DENIED, status=403, content_type=TEXT)
    form = PolicyForm(request.POST)
    context: dict[str, Any] = {"draft": True, "problems": []}
    editing = request.POST.get("policy_id", "")
    policy_id = int(editing) if editing.isdecimal() and len(editing) < 12 else None
    if not form.is_valid():
        errors = {key: " ".join(str(e) for e in found) for key, found in form.errors.items()}
        context["problems"] = _problems(form, errors)
        return render(request, PREVIEW, context)
    try:
        draft = services.policy_check(form.spec(), policy_id=policy_id)
    except services.InvalidInput as exc:
        context["problems"] = _problems(form, exc.errors)
    else:
        context.update(policy=draft, report=services.retention_preview(draft))
    return render(request, PREVIEW, context)


def _problems(form: PolicyForm, errors: dict[str, str]) -> list[str]:
    """Each error with the label of its field, for the preview beside the form."""
    return [
        f"{form.fields[key].label or key}: {message}" if key in form.fields else message
        for key, message in errors.items()
    ]


@page_view("POST")
def policy_enabled(request: HttpRequest, policy_id: int) -> HttpResponse:
    if refused := _forbidden(request, "policy_change", f"policy {policy_id}"):
        return refused
    enabled = request.POST.get("enabled") == "1"
    try:
        policy = services.policy_set_enabled(policy_id, enabled=enabled, user=request.user)
    except services.ServiceError as exc:
        return _page(request, status=exc.status, error=exc.message)
    state = "enabled: the hourly job applies it" if enabled else "disabled: the hourly job skips it"
    messages.success(request, f"Policy {policy.name} {state}.")
    return redirect("dashboard:retention")


@page_view("POST")
def policy_run(request: HttpRequest, policy_id: int) -> HttpResponse:
    if refused := _forbidden(request, "prune", f"policy {policy_id}"):
        return refused
    dry_run = request.POST.get("dry_run") == "1"
    try:
        report = services.policy_apply(policy_id, dry_run=dry_run, user=request.user)
    except services.ServiceError as exc:
        return _page(request, status=exc.status, error=exc.message)
    messages.success(request, _ran(report))
    return redirect("dashboard:retention")


def _ran(report: services.PruneReport) -> str:
    what = _counted(report)
    if report.dry_run:
        return f"Dry run of {report.policy}: it would delete {what} now. Nothing was deleted."
    return f"{report.policy} deleted {what}."


@page_view("POST")
def hold_add(request: HttpRequest) -> HttpResponse:
    asked = validation.printable(request.POST.get("run", ""))[:100]  # the refusal must be storable
    if refused := _forbidden(request, "hold", f"run {asked}"):
        return refused
    form = HoldForm(request.POST)
    if not form.is_valid():
        return _page(request, status=422, hold_form=form)
    run_id = form.cleaned_data["run"]
    try:
        services.run_hold(run_id, user=request.user, hold=True, reason=form.cleaned_data["reason"])
    except services.ServiceError as exc:
        form.add_error("reason" if "reason" in exc.errors else "run", exc.message)
        return _page(request, status=refusal_status(exc), hold_form=form)
    messages.success(request, f"Run {str(run_id)[:8]} is on hold: retention will not touch it.")
    return redirect("dashboard:retention")


@page_view("POST")
def hold_release(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    if refused := _forbidden(request, "release", f"run {run_id}"):
        return refused
    try:
        services.run_hold(run_id, user=request.user, hold=False)
    except services.ServiceError as exc:
        return _page(request, status=exc.status, error=exc.message)
    messages.success(request, f"Run {str(run_id)[:8]} released: retention applies to it again.")
    return redirect("dashboard:retention")
