"""The operator's pages (namespace ``dashboard``)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.web import (
    views_approvals,
    views_audit,
    views_checkpoints,
    views_retention,
    views_run_detail,
    views_runs,
    views_storage,
    views_versions,
)

app_name = "dashboard"

CHECKPOINT = "runs/<uuid:run_id>/checkpoints/<str:checkpoint_id>/"

urlpatterns: list[URLPattern] = [
    path("", views_runs.run_list, name="run_list"),
    path("runs/start/", views_runs.run_start, name="run_start"),
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
    path("audit/", views_audit.audit, name="audit"),
    path("audit/export/", views_audit.audit_export, name="audit_export"),
]
