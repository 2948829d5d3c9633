"""The operator's pages (namespace ``dashboard``)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.web.approvals import views as approvals
from dashboard.web.checkpoints import views as checkpoints
from dashboard.web.operations import alerts, audit, prices, retention, schedules, storage
from dashboard.web.run_page import sensitive, versions
from dashboard.web.run_page import views as run_page
from dashboard.web.runs import bulk, compare_page, saved
from dashboard.web.runs import views as runs
from dashboard.web.tokens import views as tokens

app_name = "dashboard"

CHECKPOINT = "runs/<uuid:run_id>/checkpoints/<str:checkpoint_id>/"

urlpatterns: list[URLPattern] = [
    path("", runs.run_list, name="run_list"),
    path("runs/start/", runs.run_start, name="run_start"),
    path("runs/compare/", compare_page.run_compare_page, name="run_compare"),
    path("views/", saved.saved_view_list, name="saved_views"),
    path("views/<int:view_id>/", saved.saved_view_open, name="saved_view_open"),
    path("views/<int:view_id>/change/", saved.saved_view_change, name="saved_view_change"),
    path("runs/bulk/", bulk.bulk_review, name="bulk_review"),
    path("runs/bulk/<uuid:bulk_id>/", bulk.bulk_progress, name="bulk_progress"),
    path("runs/<uuid:run_id>/", run_page.run_detail, name="run_detail"),
    path("runs/<uuid:run_id>/actions/", run_page.run_actions, name="run_actions"),
    path("runs/<uuid:run_id>/reveal/", sensitive.run_reveal, name="run_reveal"),
    path("runs/<uuid:run_id>/events/", run_page.run_events, name="run_events"),
    path(
        "runs/<uuid:run_id>/subworkflow/",
        run_page.run_subworkflow,
        name="run_subworkflow",
    ),
    path("runs/<uuid:run_id>/cancel/", run_page.run_cancel, name="run_cancel"),
    path("runs/<uuid:run_id>/retry/", run_page.run_retry, name="run_retry"),
    path("runs/<uuid:run_id>/version/", versions.run_version, name="run_version"),
    path("runs/<uuid:run_id>/migrate/", versions.run_migrate, name="run_migrate"),
    path("runs/migrations/", versions.migrations, name="migrations"),
    path(CHECKPOINT, checkpoints.checkpoint_detail, name="checkpoint_detail"),
    path(f"{CHECKPOINT}download/", checkpoints.checkpoint_download, name="checkpoint_download"),
    path(
        f"{CHECKPOINT}conversations/<path:executor_id>/",  # a sub-workflow's ids hold "/"
        checkpoints.checkpoint_conversation,
        name="checkpoint_conversation",
    ),
    path(f"{CHECKPOINT}resume/", checkpoints.checkpoint_resume, name="checkpoint_resume"),
    path(f"{CHECKPOINT}fork/", checkpoints.checkpoint_fork, name="checkpoint_fork"),
    path(
        f"{CHECKPOINT}fork/check/",
        checkpoints.checkpoint_fork_check,
        name="checkpoint_fork_check",
    ),
    path("approvals/", approvals.approval_inbox, name="approval_inbox"),
    path("approvals/archive/", approvals.approval_archive, name="approval_archive"),
    path("approvals/decide/", approvals.approvals_decide_many, name="approvals_decide_many"),
    path(
        "approvals/<str:request_id>/assign/",
        approvals.approval_assign,
        name="approval_assign",
    ),
    path(
        "approvals/<str:request_id>/decide/",
        approvals.approval_decide,
        name="approval_decide",
    ),
    path(
        "approvals/<str:request_id>/claim/",
        approvals.approval_claim,
        name="approval_claim",
    ),
    path(
        "approvals/<str:request_id>/status/",
        approvals.approval_status,
        name="approval_status",
    ),
    path("storage/", storage.storage, name="storage"),
    path("retention/", retention.retention, name="retention"),
    path("retention/new/", retention.policy_new, name="retention_policy_new"),
    path("retention/preview/", retention.policy_draft_preview, name="retention_draft_preview"),
    path("retention/<int:policy_id>/edit/", retention.policy_edit, name="retention_policy_edit"),
    path(
        "retention/<int:policy_id>/preview/",
        retention.policy_preview,
        name="retention_policy_preview",
    ),
    path(
        "retention/<int:policy_id>/enabled/",
        retention.policy_enabled,
        name="retention_policy_enabled",
    ),
    path("retention/<int:policy_id>/run/", retention.policy_run, name="retention_policy_run"),
    path("retention/holds/", retention.hold_add, name="retention_hold_add"),
    path(
        "retention/holds/<uuid:run_id>/release/",
        retention.hold_release,
        name="retention_hold_release",
    ),
    path("schedules/", schedules.schedule_list, name="schedules"),
    path("schedules/new/", schedules.schedule_new, name="schedule_new"),
    path("schedules/<int:schedule_id>/edit/", schedules.schedule_edit, name="schedule_edit"),
    path("schedules/<int:schedule_id>/pause/", schedules.schedule_pause, name="schedule_pause"),
    path(
        "schedules/<int:schedule_id>/resume/",
        schedules.schedule_resume,
        name="schedule_resume",
    ),
    path(
        "schedules/<int:schedule_id>/trigger/",
        schedules.schedule_trigger,
        name="schedule_trigger",
    ),
    path(
        "schedules/<int:schedule_id>/delete/",
        schedules.schedule_delete,
        name="schedule_delete",
    ),
    path("alerts/", alerts.alert_list, name="alerts"),
    path("alerts/new/", alerts.alert_rule_new, name="alert_rule_new"),
    path("alerts/<int:rule_id>/edit/", alerts.alert_rule_edit, name="alert_rule_edit"),
    path("alerts/<int:rule_id>/delete/", alerts.alert_rule_delete, name="alert_rule_delete"),
    path("prices/", prices.price_list, name="prices"),
    path("prices/new/", prices.price_new, name="price_new"),
    path("prices/<int:price_id>/edit/", prices.price_edit, name="price_edit"),
    path("prices/<int:price_id>/delete/", prices.price_delete, name="price_delete"),
    path("audit/", audit.audit, name="audit"),
    path("audit/export/", audit.audit_export, name="audit_export"),
    path("tokens/", tokens.token_list, name="tokens"),
    path("tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token_revoke"),
]
