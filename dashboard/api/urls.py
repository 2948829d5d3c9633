"""The JSON API's routes, mounted under ``/api/`` by the root URLconf (dashboard/config/urls.py)."""

from __future__ import annotations

from django.urls import URLPattern, path

from dashboard.api.views import (
    approval_claim,
    approval_decide,
    approvals,
    checkpoint_detail,
    retention_prune,
    run_cancel,
    run_checkpoints,
    run_detail,
    run_events,
    run_fork,
    run_hold,
    run_resume,
    run_retry,
    runs,
    workflows,
)

urlpatterns: list[URLPattern] = [
    path("workflows/", workflows, name="api-workflows"),
    path("runs/", runs, name="api-runs"),
    path("runs/<uuid:run_id>/", run_detail, name="api-run"),
    path("runs/<uuid:run_id>/checkpoints/", run_checkpoints, name="api-run-checkpoints"),
    path("runs/<uuid:run_id>/checkpoints/<str:checkpoint_id>/", checkpoint_detail, name="api-checkpoint"),
    path("runs/<uuid:run_id>/events/", run_events, name="api-run-events"),
    path("runs/<uuid:run_id>/resume/", run_resume, name="api-run-resume"),
    path("runs/<uuid:run_id>/fork/", run_fork, name="api-run-fork"),
    path("runs/<uuid:run_id>/cancel/", run_cancel, name="api-run-cancel"),
    path("runs/<uuid:run_id>/retry/", run_retry, name="api-run-retry"),
    path("approvals/", approvals, name="api-approvals"),
    path("approvals/<str:request_id>/decide/", approval_decide, name="api-approval-decide"),
    path("approvals/<str:request_id>/claim/", approval_claim, name="api-approval-claim"),
    path("runs/<uuid:run_id>/hold/", run_hold, name="api-run-hold"),
    path("retention/prune/", retention_prune, name="api-retention-prune"),
]
