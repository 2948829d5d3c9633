"""The operator's pages (namespace ``dashboard``)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.web import (
    views_alerts,
    views_approvals,
    views_audit,
    views_bulk,
    views_checkpoints,
    views_compare,
    views_retention,
    views_run_detail,
    views_runs,
    views_saved,
    views_schedules,
    views_storage,
    views_versions,
)

app_name = "dashboard"

CHECKPOINT = "runs/<uuid:run_id>/checkpoints/<str:checkpoint_id>/"

urlpatterns: list[URLPattern] = [
    path("", views_runs.run_list, name="run_list"),
    path("runs/start/", views_runs.run_start, name="run_start"),
    path("runs/compare/", views_compare.run_compare_page, name="run_compare"),
    path("views/", views_saved.saved_view_list, name="saved_views"),
    path("views/<int:view_id>/", views_saved.saved_view_open, name="saved_view_open"),
    path("views/<int:view_id>/change/", views_saved.saved_view_change, name="saved_view_change"),
    path("runs/bulk/", views_bulk.bulk_review, name="bulk_review"),
    path("runs/bulk/<uuid:bulk_id>/", views_bulk.bulk_progress, name="bulk_progress"),
    path("runs/<uuid:run_id>/", views_run_detail.run_detail, name="run_detail"),
    path("runs/<uuid:run_id>/actions/", views_run_detail.run_actions, name="run_actions"),
    path("runs/<uuid:run_id>/events/", views_run_detail.run_events, name="run_events"),
    path(
        "runs/<uuid:run_id>/subworkflow/",
        views_run_detail.run_subworkflow,
        name="run_subworkflow",
    ),
    path("runs/<uuid:run_id>/cancel/", views_run_detail.run_cancel, name="run_cancel"),
    path("runs/<uuid:run_id>/retry/", views_run_detail.run_retry, name="run_retry"),
    path("runs/<uuid:run_id>/version/", views_versions.run_version, name="run_version"),
    path("runs/<uuid:run_id>/migrate/", views_versions.run_migrate, name="run_migrate"),
    path("runs/migrations/", views_versions.migrations, name="migrations"),
    path(CHECKPOINT, views_checkpoints.checkpoint_detail, name="checkpoint_detail"),
    path(
        f"{CHECKPOINT}download/", views_checkpoints.checkpoint_download, name="checkpoint_download"
    ),
    path(f"{CHECKPOINT}resume/", views_checkpoints.checkpoint_resume, name="checkpoint_resume"),
    path(f"{CHECKPOINT}fork/", views_checkpoints.checkpoint_fork, name="checkpoint_fork"),
    path(
        f"{CHECKPOINT}fork/check/",
        views_checkpoints.checkpoint_fork_check,
        name="checkpoint_fork_check",
    ),
    path("approvals/", views_approvals.approval_inbox, name="approval_inbox"),
    path("approvals/archive/", views_approvals.approval_archive, name="approval_archive"),
    path("approvals/decide/", views_approvals.approvals_decide_many, name="approvals_decide_many"),
    path(
        "approvals/<str:request_id>/assign/",
        views_approvals.approval_assign,
        name="approval_assign",
    ),
    path(
        "approvals/<str:request_id>/decide/",
        views_approvals.approval_decide,
        name="approval_decide",
    ),
    path(
        "approvals/<str:request_id>/claim/",
        views_approvals.approval_claim,
        name="approval_claim",
    ),
    path(
        "approvals/<str:request_id>/status/",
        views_approvals.approval_status,
        name="approval_status",
    ),
    path("storage/", views_storage.storage, name="storage"),
    path("retention/", views_retention.retention, name="retention"),
    path("retention/new/", views_retention.policy_new, name="retention_policy_new"),
    path("retention/preview/", views_retention.policy_draft_preview, name="retention_draft_preview"),
    path("retention/<int:policy_id>/edit/", views_retention.policy_edit, name="retention_policy_edit"),
    path("retention/<int:policy_id>/preview/", views_retention.policy_preview, name="retention_policy_preview"),
    path("retention/<int:policy_id>/enabled/", views_retention.policy_enabled, name="retention_policy_enabled"),
    path("retention/<int:policy_id>/run/", views_retention.policy_run, name="retention_policy_run"),
    path("retention/holds/", views_retention.hold_add, name="retention_hold_add"),
    path("retention/holds/<uuid:run_id>/release/", views_retention.hold_release, name="retention_hold_release"),
    path("schedules/", views_schedules.schedule_list, name="schedules"),
    path("schedules/new/", views_schedules.schedule_new, name="schedule_new"),
    path("schedules/<int:schedule_id>/edit/", views_schedules.schedule_edit, name="schedule_edit"),
    path("schedules/<int:schedule_id>/pause/", views_schedules.schedule_pause, name="schedule_pause"),
    path("schedules/<int:schedule_id>/resume/", views_schedules.schedule_resume, name="schedule_resume"),
    path("schedules/<int:schedule_id>/trigger/", views_schedules.schedule_trigger, name="schedule_trigger"),
    path("schedules/<int:schedule_id>/delete/", views_schedules.schedule_delete, name="schedule_delete"),
    path("alerts/", views_alerts.alert_list, name="alerts"),
    path("alerts/new/", views_alerts.alert_rule_new, name="alert_rule_new"),
    path("alerts/<int:rule_id>/edit/", views_alerts.alert_rule_edit, name="alert_rule_edit"),
    path("alerts/<int:rule_id>/delete/", views_alerts.alert_rule_delete, name="alert_rule_delete"),
    path("audit/", views_audit.audit, name="audit"),
    path("audit/export/", views_audit.audit_export, name="audit_export"),
]
