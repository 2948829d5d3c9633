"""Access: API tokens (only their SHA-256 is stored), roles granted for named workflows, single
sign-on identities and the append-only audit trail."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

__all__ = [
    "ApiToken",
    "AuditEntry",
    "AuditLogIsAppendOnly",
    "SingleSignOnIdentity",
    "WorkflowGrant",
]


def _every_scope() -> list[str]:
    # What a token made before scopes existed may do: all its user's roles allow, as before.
    return ["read", "operate", "decide", "admin"]


class ApiToken(models.Model):
    """A bearer token for the JSON API; only its SHA-256 is stored (see
    ``dashboard.access.tokens``, which also says what each scope allows).

    ``expires_at`` is None only for tokens created before expiry existed (migration 0024):
    every token created since has one.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, default="")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scopes = models.JSONField(default=_every_scope)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    def __str__(self) -> str:
        return f"{self.name or 'token'} for {self.user}"


class WorkflowGrant(models.Model):
    """A role for one workflow only (``dashboard.access.authz``): its holder has the role's
    permissions on that workflow's runs and requests, and sees nothing of other workflows but
    what another grant, or the role held as a group (all workflows), gives."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workflow_grants"
    )
    role = models.ForeignKey("auth.Group", on_delete=models.CASCADE, related_name="workflow_grants")
    workflow_name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = (
            models.UniqueConstraint(
                fields=["user", "role", "workflow_name"], name="workflow_grant_unique"
            ),
        )

    def __str__(self) -> str:
        return f"{self.role} on {self.workflow_name} for {self.user}"


class SingleSignOnIdentity(models.Model):
    """The account at an OpenID Connect provider (its ``iss`` and ``sub``) a user signs in as.

    Matched on these two alone (see ``dashboard.access.sso``): an e-mail address is not an
    identity a provider guarantees.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=300)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique"),
        )

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class AuditLogIsAppendOnly(Exception):
    """Raised on any attempt to change or remove an audit entry through the application."""


class _AppendOnlyQuerySet[M: models.Model](models.QuerySet[M]):
    def update(self, **kwargs: Any) -> int:
        raise AuditLogIsAppendOnly("audit entries cannot be changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly("audit entries cannot be deleted")


class _AppendOnly(models.Model):
    """A row the application adds and never changes nor removes."""

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditLogIsAppendOnly(f"{self._meta.verbose_name_plural} cannot be changed")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditLogIsAppendOnly(f"{self._meta.verbose_name_plural} cannot be deleted")


class AuditEntry(_AppendOnly):
    """One operator action or refusal: who, when, what, and the checkpoints before and after.

    Append-only: the application can add entries and nothing else (the model, its queryset and
    the admin refuse changes; on PostgreSQL a trigger refuses UPDATE and DELETE as well).
    Retention never touches it, and it does not reference runs by foreign key, so a pruned run
    leaves its history here as a tombstone.
    """

    OK = "ok"
    DENIED = "denied"

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # No database constraint and no cascade: deleting a user must not rewrite history.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")  # kept if the user goes
    action = models.CharField(max_length=40)
    outcome = models.CharField(max_length=10, default=OK)
    run_id = models.UUIDField(null=True, blank=True)
    workflow_name = models.CharField(max_length=200, blank=True, default="")
    target = models.CharField(max_length=300, blank=True, default="")
    checkpoint_before = models.CharField(max_length=128, blank=True, default="")
    checkpoint_after = models.CharField(max_length=128, blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True, default="")

    objects = _AppendOnlyQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "audit entries"
        ordering = ("-created_at", "-id")
        indexes = (
            models.Index(fields=["run_id", "created_at"], name="audit_run_created"),
            models.Index(fields=["action", "created_at"], name="audit_action_created"),
        )
        constraints = (
            models.CheckConstraint(
                condition=Q(outcome__in=["ok", "denied"]), name="audit_outcome_valid"
            ),
        )

    def __str__(self) -> str:
        return (
            f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} "
            f"{self.action} {self.outcome}"
        )


class AuditSeal(_AppendOnly):
    """One link of the audit log's hash chain: entry ``entry_id`` as it was when sealed, hashed
    with the link before it (``dashboard.access.audit_chain``).

    Kept apart from the entries so that sealing never updates an entry (the trigger refuses
    that) and so that the chain runs in the order entries were sealed, which is gapless, rather
    than in id order, which commits do not follow. Append-only like the entries: on PostgreSQL
    the same trigger refuses UPDATE and DELETE.
    """

    seq = models.PositiveBigIntegerField(primary_key=True)  # 1, 2, 3... with no gap
    entry_id = models.BigIntegerField(unique=True)  # no foreign key: a deleted entry must show
    digest = models.CharField(max_length=64)
    sealed_at = models.DateTimeField(default=timezone.now)

    objects = _AppendOnlyQuerySet["AuditSeal"].as_manager()

    class Meta:
        ordering = ("seq",)

    def __str__(self) -> str:
        return f"seal {self.seq} of audit entry {self.entry_id}"
