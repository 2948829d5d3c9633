"""Read-only admin views of runs, checkpoints, approvals and events; users with the roles they
hold for named workflows only.

Changes go through ``dashboard.services`` (guarded transitions, events, enqueueing), so the
admin never adds, edits or deletes rows itself; admin actions that call services may.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpRequest
from django.utils.html import format_html

from dashboard import outbound, services
from dashboard.models import (
    ApprovalRequest,
    ApprovalRule,
    AuditEntry,
    Checkpoint,
    CheckpointBlob,
    ModelPrice,
    RetentionPolicy,
    RunEvent,
    WorkflowGrant,
    WorkflowRun,
)

if TYPE_CHECKING:  # ModelAdmin and ModelForm are generic only in django-stubs, not at runtime
    _ModelAdmin = admin.ModelAdmin[Any]
    _ModelForm = forms.ModelForm[Any]
else:
    _ModelAdmin = admin.ModelAdmin
    _ModelForm = forms.ModelForm


# The navigation sidebar takes 300 of a 1280 px screen on every page, beside the changelists'
# own filters; the breadcrumbs and the index lead to the same places.
admin.site.enable_nav_sidebar = False


class FitsAdmin(_ModelAdmin):
    """Changelists whose columns wrap instead of running off a 1280 px screen (css/admin.css)."""

    class Media:
        css: ClassVar[dict[str, tuple[str, ...]]] = {"all": ("css/admin.css",)}


def _clipped(text: str, limit: int) -> str:
    """A long value shortened in its cell, whole in its tooltip."""
    if len(text) <= limit:
        return text
    return format_html('<span title="{}">{}…</span>', text, text[: limit - 1])


class ReadOnlyAdmin(FitsAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


def _service_action(
    modeladmin: Any, request: HttpRequest, call: Any, items: Any, done: str
) -> None:
    """Run a service per item and report, turning refusals into admin messages."""
    ok, refused = 0, []
    for item in items:
        try:
            call(item)
            ok += 1
        except services.ServiceError as exc:
            refused.append(exc.message)
    if ok:
        modeladmin.message_user(request, f"{done}: {ok}", messages.SUCCESS)
    for message in refused[:10]:
        modeladmin.message_user(request, message, messages.ERROR)


@admin.register(WorkflowRun)
class WorkflowRunAdmin(ReadOnlyAdmin):
    actions = ("put_on_hold", "release_hold")
    list_display = (
        "id",
        "workflow_name",
        "status",
        "on_hold",
        "current_superstep",
        "attempts",
        "created_by",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "on_hold", "workflow_name", "created_at")
    search_fields = ("=id", "workflow_name", "=engine_run_id", "error_message")

    @admin.action(description="Put on legal hold (retention never touches them)")
    def put_on_hold(self, request: HttpRequest, queryset: Any) -> None:
        _service_action(
            self,
            request,
            lambda run: services.run_hold(
                run.pk, user=request.user, hold=True, reason="held from the admin"
            ),
            queryset,
            "Runs put on hold",
        )

    @admin.action(description="Release the legal hold")
    def release_hold(self, request: HttpRequest, queryset: Any) -> None:
        _service_action(
            self,
            request,
            lambda run: services.run_hold(run.pk, user=request.user, hold=False),
            queryset,
            "Holds released",
        )

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


def _refuse_policy_change(request: HttpRequest, object_id: str | None) -> None:
    """Django's own permission check would answer 403 without a trace; an attempt to change a
    policy goes through the service check first, so the refusal is in the audit log."""
    if request.method == "POST" and not services.can(request.user, "policy_change"):
        try:
            services.require(request.user, "policy_change", target=f"policy {object_id or '(new)'}")
        except services.Forbidden as exc:
            raise PermissionDenied(exc.message) from None


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(FitsAdmin):
    """Policies are edited here; every change is audited, and each row previews what it would
    delete right now, before anyone applies it. Its three rules share one column: as three
    columns with their long names the list ran past a 1280 px screen."""

    list_display = ("name", "enabled", "workflow_pattern", "status", "rules", "preview")
    list_filter = ("enabled", "status")
    search_fields = ("name", "workflow_pattern")
    readonly_fields = ("created_at",)  # when a policy was made is a fact, not a setting
    actions = ("preview_policies", "apply_policies")

    @admin.display(description="Rules")
    def rules(self, policy: RetentionPolicy) -> str:
        said = []
        if policy.keep_last_checkpoints is not None:
            said.append(f"keep last {policy.keep_last_checkpoints}")
        if policy.delete_checkpoints_older_than_days is not None:
            said.append(f"checkpoints > {policy.delete_checkpoints_older_than_days} d")
        if policy.delete_runs_older_than_days is not None:
            said.append(f"runs > {policy.delete_runs_older_than_days} d")
        return " · ".join(said)

    @admin.display(description="Would delete now")
    def preview(self, policy: RetentionPolicy) -> str:
        report = services.retention_preview(policy)
        return f"{report.runs} runs, {report.checkpoints} checkpoints, {report.megabytes:.2f} MB"

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> Any:
        _refuse_policy_change(request, object_id)
        return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> Any:
        _refuse_policy_change(request, object_id)
        return super().delete_view(request, object_id, extra_context)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for obj in queryset:  # the bulk "delete selected" action is a policy change too
            services.audit.record(
                request.user,
                "policy_change",
                target=f"policy {obj.name}",
                details={"deleted": True},
            )
        super().delete_queryset(request, queryset)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        services.require(request.user, "policy_change", target=f"policy {obj.name}")
        super().save_model(request, obj, form, change)
        services.audit.record(
            request.user,
            "policy_change",
            target=f"policy {obj.name}",
            details={"created": not change, "fields": sorted(form.changed_data)},
        )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        services.require(request.user, "policy_change", target=f"policy {obj.name}")
        services.audit.record(
            request.user, "policy_change", target=f"policy {obj.name}", details={"deleted": True}
        )
        super().delete_model(request, obj)

    @admin.action(description="Preview (dry run): what would be deleted")
    def preview_policies(self, request: HttpRequest, queryset: Any) -> None:
        for policy in queryset:
            report = services.checkpoint_prune(policy=policy, dry_run=True, user=request.user)[0]
            self.message_user(
                request,
                f"{policy.name}: would delete {report.runs} runs, "
                f"{report.checkpoints} checkpoints, {report.megabytes:.2f} MB",
            )

    @admin.action(description="Apply now (delete)")
    def apply_policies(self, request: HttpRequest, queryset: Any) -> None:
        for policy in queryset:
            try:
                report = services.checkpoint_prune(policy=policy, user=request.user)[0]
            except services.ServiceError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return
            self.message_user(
                request,
                f"{policy.name}: deleted {report.runs} runs, {report.checkpoints} "
                f"checkpoints, {report.megabytes:.2f} MB in {report.batches} batches",
                messages.SUCCESS,
            )


@admin.register(ModelPrice)
class ModelPriceAdmin(FitsAdmin):
    """The price table: what each model's tokens cost, per million. Saved and deleted through
    the service, so every change is validated and audited as the API's would be."""

    list_display = ("model", "input_per_million", "output_per_million", "updated_by", "updated_at")
    search_fields = ("model",)
    readonly_fields = ("updated_by", "updated_at")

    # Whoever may change prices (the Admin role) manages the table; the model's own
    # permissions are granted to no role.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return services.can(request.user, "price_change")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return services.can(request.user, "price_change")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return services.can(request.user, "price_change")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return services.can(request.user, "price_change")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return services.can(request.user, "price_change")

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        try:
            saved = services.price_set(
                obj.model,
                input_per_million=obj.input_per_million,
                output_per_million=obj.output_per_million,
                user=request.user,
            )
        except services.ServiceError as exc:
            raise PermissionDenied(exc.message) from exc
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        services.price_delete(obj.model, user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for price in queryset:  # "delete selected": each removal is audited as one is
            services.price_delete(price.model, user=request.user)


class ApprovalRuleForm(_ModelForm):
    class Meta:
        model = ApprovalRule
        fields = "__all__"  # the admin shows every field of the rule

    def clean_webhook_url(self) -> str:
        url = str(self.cleaned_data.get("webhook_url") or "")
        refused = outbound.refusal(url) if url else None
        if refused:
            raise forms.ValidationError(refused)
        return url


@admin.register(ApprovalRule)
class ApprovalRuleAdmin(FitsAdmin):
    form = ApprovalRuleForm
    list_display = (
        "workflow_name",
        "forbid_self_approval",
        "required_approvals",
        "assign_to_group",
        "deadline_minutes",
        "default_outcome",
    )
    search_fields = ("workflow_name",)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        services.audit.record(
            request.user,
            "policy_change",
            target=f"approval rules {obj.workflow_name}",
            details={"created": not change, "fields": sorted(form.changed_data)},
        )


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """Searchable and read-only: the application offers no way to change or delete entries.
    Long values (targets, run and checkpoint ids) are shortened in the list, whole on hover and
    on the entry's page, so the list fits a 1280 px screen beside its filters."""

    list_display = (
        "created_at",
        "actor_name",
        "action",
        "outcome",
        "short_target",
        "short_run",
        "checkpoints",
        "ip",
    )
    list_filter = ("outcome", "action", "created_at")
    search_fields = (
        "actor_name",
        "action",
        "target",
        "=run_id",
        "=checkpoint_before",
        "=checkpoint_after",
    )
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    show_full_result_count = False
    actions = None  # not even the built-in bulk delete

    @admin.display(description="Target", ordering="target")
    def short_target(self, entry: AuditEntry) -> str:
        return _clipped(entry.target, 60)

    @admin.display(description="Run", ordering="run_id")
    def short_run(self, entry: AuditEntry) -> str:
        return _clipped(str(entry.run_id), 9) if entry.run_id else "-"

    @admin.display(description="Checkpoints")
    def checkpoints(self, entry: AuditEntry) -> str:
        if not (entry.checkpoint_before or entry.checkpoint_after):
            return "-"
        return format_html(
            "{} → {}",
            _clipped(entry.checkpoint_before or "-", 9),
            _clipped(entry.checkpoint_after or "-", 9),
        )


# ------------------------------------------------------------------ roles for named workflows


class WorkflowGrantForm(forms.ModelForm):  # type: ignore[type-arg]  # generic only in django-stubs
    """A role (one of the four) for one registered workflow."""

    class Meta:
        model = WorkflowGrant
        fields = ("user", "role", "workflow_name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from dashboard import catalog
        from dashboard.access.authz import ROLE_NAMES

        super().__init__(*args, **kwargs)
        self.fields["role"].queryset = Group.objects.filter(name__in=ROLE_NAMES)  # type: ignore[attr-defined]
        names = catalog.names()
        current = self.instance.workflow_name if self.instance.pk else ""
        choices = [(n, n) for n in names] + (
            [(current, f"{current} (not registered)")] if current and current not in names else []
        )
        self.fields["workflow_name"] = forms.ChoiceField(choices=choices, label="Workflow")


class WorkflowGrantInline(admin.TabularInline):  # type: ignore[type-arg]
    model = WorkflowGrant
    form = WorkflowGrantForm
    fk_name = "user"
    extra = 0
    fields = ("role", "workflow_name")
    verbose_name = "role for one workflow"
    verbose_name_plural = (
        "Roles for named workflows only (a role chosen in Groups above counts for every workflow)"
    )


admin.site.unregister(User)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):  # type: ignore[type-arg]  # generic only in django-stubs
    inlines = (*DjangoUserAdmin.inlines, WorkflowGrantInline)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        if formset.model is WorkflowGrant:
            _audit_grants(request, form.instance, formset)


@admin.register(WorkflowGrant)
class WorkflowGrantAdmin(FitsAdmin):
    form = WorkflowGrantForm
    list_display = ("user", "role", "workflow_name", "created_at")
    list_filter = ("role", "workflow_name")
    search_fields = ("user__username", "workflow_name")

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        services.audit.record(
            request.user,
            "grant",
            target=f"user {obj.user}",
            details={"role": obj.role.name, "workflow": obj.workflow_name},
        )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        services.audit.record(
            request.user,
            "ungrant",
            target=f"user {obj.user}",
            details={"role": obj.role.name, "workflow": obj.workflow_name},
        )
        super().delete_model(request, obj)


def _audit_grants(request: HttpRequest, user: Any, formset: Any) -> None:
    """Who gave or took which role on which workflow, from the user page's inline."""
    for grant in formset.new_objects:
        services.audit.record(
            request.user,
            "grant",
            target=f"user {user}",
            details={"role": grant.role.name, "workflow": grant.workflow_name},
        )
    for grant in formset.deleted_objects:
        services.audit.record(
            request.user,
            "ungrant",
            target=f"user {user}",
            details={"role": grant.role.name, "workflow": grant.workflow_name},
        )
    for grant, _ in formset.changed_objects:
        services.audit.record(
            request.user,
            "grant",
            target=f"user {user}",
            details={"role": grant.role.name, "workflow": grant.workflow_name},
        )
