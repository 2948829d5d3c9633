"""Read-only admin views of runs, checkpoints, approvals and events.

Changes go through ``dashboard.services`` (guarded transitions, events, enqueueing), so the
admin never adds, edits or deletes rows itself; admin actions that call services may.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .models import ApprovalRequest, Checkpoint, CheckpointBlob, RunEvent, WorkflowRun

if TYPE_CHECKING:  # ModelAdmin is generic only in django-stubs, not at runtime
    _ModelAdmin = admin.ModelAdmin[Any]
else:
    _ModelAdmin = admin.ModelAdmin


class ReadOnlyAdmin(_ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(WorkflowRun)
class WorkflowRunAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "workflow_name",
        "status",
        "current_superstep",
        "attempts",
        "created_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "workflow_name", "created_at")
    search_fields = ("=id", "workflow_name", "=engine_run_id", "error_message")
    list_select_related = ("created_by",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    show_full_result_count = False  # COUNT(*) over every run on each page is wasted work


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = (
        "checkpoint_id",
        "workflow_name",
        "run",
        "superstep",
        "pending_request_count",
        "size_bytes",
        "created_at",
    )
    list_filter = ("workflow_name", "created_at")
    search_fields = ("=checkpoint_id", "=engine_run_id", "=run__id")
    list_select_related = ("run",)
    exclude = ("blobs",)
    ordering = ("-created_at",)
    show_full_result_count = False


@admin.register(CheckpointBlob)
class CheckpointBlobAdmin(ReadOnlyAdmin):
    list_display = ("digest", "size_bytes", "created_at")
    search_fields = ("=digest",)
    ordering = ("-created_at",)
    show_full_result_count = False


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(ReadOnlyAdmin):
    list_display = (
        "request_id",
        "run",
        "executor_id",
        "status",
        "decided_by",
        "decided_at",
        "created_at",
    )
    list_filter = ("status", "created_at")
    search_fields = ("=request_id", "=run__id", "executor_id")
    list_select_related = ("run", "decided_by")
    ordering = ("-created_at",)


@admin.register(RunEvent)
class RunEventAdmin(ReadOnlyAdmin):
    list_display = ("run", "seq", "type", "created_at")
    list_filter = ("type",)
    search_fields = ("=run__id", "type")
    list_select_related = ("run",)
    ordering = ("-created_at",)
    show_full_result_count = False
