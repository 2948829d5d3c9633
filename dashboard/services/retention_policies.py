"""Retention policies as an admin edits them: create one, change it, enable or disable it,
check a draft without saving it (the live preview beside the form), and apply one now.

``retention`` decides what a policy deletes; this module decides what a policy may say before
it is saved, so the dashboard's pages, the API and any later caller refuse the same things with
the same words. Refusals carry ``errors`` keyed by field name (``"__all__"`` for the policy as a
whole), for the forms to put beside their fields. Every saved change is audited as
``policy_change`` with what changed from what to what; a refusal by role is audited by ``authz``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db import IntegrityError, transaction

from dashboard.access import audit, authz
from dashboard.core.errors import Conflict, InvalidInput, NotFound
from dashboard.core.types import Actor
from dashboard.models import RetentionPolicy
from dashboard.services import retention, validation

__all__ = [
    "MAX_DAYS",
    "MAX_ID",
    "MAX_KEEP_LAST",
    "PolicySpec",
    "policy_apply",
    "policy_check",
    "policy_create",
    "policy_set_enabled",
    "policy_update",
]

# Bounds that keep a typo (an extra row of zeros) from reaching the database as an overflow:
# a century of days, a million checkpoints per run.
MAX_DAYS = 36_500
MAX_KEEP_LAST = 1_000_000

# Ids are BigAutoField keys; a larger number from a URL is no policy (the databases would
# refuse to compare with it rather than find nothing).
MAX_ID = 2**63 - 1

_RULES = (
    "keep_last_checkpoints",
    "delete_checkpoints_older_than_days",
    "delete_runs_older_than_days",
)


@dataclasses.dataclass(frozen=True)
class PolicySpec:
    """What an admin asks a policy to be: the editable fields of ``RetentionPolicy``."""

    name: str
    workflow_pattern: str = "*"
    status: str = RetentionPolicy.Status.COMPLETED
    keep_last_checkpoints: int | None = None
    delete_checkpoints_older_than_days: int | None = None
    delete_runs_older_than_days: int | None = None
    enabled: bool = True

    def values(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def policy_check(spec: PolicySpec, *, policy_id: int | None = None) -> RetentionPolicy:
    """``spec`` as an unsaved policy, ready for ``retention_preview``, or the reasons it cannot
    be saved; ``policy_id`` is the policy being edited (its own name is not taken).

    Raises:
        InvalidInput: ``errors`` names each offending field.
    """
    errors: dict[str, str] = {}
    name = _text(spec.name, "name", 100, errors)
    pattern = _text(spec.workflow_pattern, "workflow_pattern", 200, errors)
    if spec.status not in RetentionPolicy.Status.values:
        errors["status"] = "Choose completed, failed or cancelled runs."
    for field in _RULES:
        _number(getattr(spec, field), field, errors)
    if all(getattr(spec, field) is None for field in _RULES):
        errors["__all__"] = (
            "Give the policy at least one rule: how many checkpoints to keep, or after how many "
            "days checkpoints or whole runs go."
        )
    if not isinstance(spec.enabled, bool):
        errors["enabled"] = "Say whether the policy is enabled."
    if name and "name" not in errors:
        others = RetentionPolicy.objects.filter(name=name)
        if policy_id is not None and 0 < policy_id <= MAX_ID:
            others = others.exclude(pk=policy_id)
        taken = others.exists()
        if taken:
            errors["name"] = f"A policy named {name!r} exists already."
    if errors:
        first = next(iter(errors.values()))
        raise InvalidInput(f"The policy cannot be saved: {first}", errors=errors)
    return RetentionPolicy(
        pk=policy_id, **{**spec.values(), "name": name, "workflow_pattern": pattern}
    )


def _text(value: object, field: str, limit: int, errors: dict[str, str]) -> str:
    if not isinstance(value, str):
        errors[field] = "Enter text."
        return ""
    text = value.strip()
    found = validation.unstorable(text)
    if found is not None:
        errors[field] = f"It {found[1]}."
    elif not text:
        errors[field] = (
            "Name a workflow or a pattern (* is every workflow)."
            if field == "workflow_pattern"
            else "Give the policy a name."
        )
    elif len(text) > limit:
        errors[field] = f"At most {limit} characters (this is {len(text)})."
    return text


def _number(value: object, field: str, errors: dict[str, str]) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        errors[field] = "Enter a whole number."
        return
    lowest, highest = (1, MAX_KEEP_LAST) if field == "keep_last_checkpoints" else (0, MAX_DAYS)
    if value < lowest:
        errors[field] = (
            "Keep at least 1 (every run keeps its newest checkpoint anyway)."
            if lowest
            else "Enter 0 or more days."
        )
    elif value > highest:
        errors[field] = f"At most {highest:,}."


def policy_create(spec: PolicySpec, *, user: Actor) -> RetentionPolicy:
    """Save a new policy.

    Raises:
        Forbidden: ``user`` may not change retention.
        InvalidInput: see ``policy_check``.
    """
    # The name is not checked yet: the refusal's record must be storable whatever it holds.
    authz.require(
        user, "policy_change", target=f"policy {validation.printable(str(spec.name))[:200]} (new)"
    )
    draft = policy_check(spec)
    with transaction.atomic():
        _save(draft)
        audit.record(
            user,
            "policy_change",
            target=f"policy {draft.name}",
            details={"created": True, "policy": _described(draft)},
        )
    return draft


def policy_update(policy_id: int, spec: PolicySpec, *, user: Actor) -> RetentionPolicy:
    """Change a policy; a save that changes nothing writes nothing and records nothing.

    Raises:
        Forbidden: ``user`` may not change retention.
        NotFound: no policy has that id.
        InvalidInput: see ``policy_check``.
    """
    authz.require(user, "policy_change", target=f"policy {policy_id}")
    draft = policy_check(spec, policy_id=policy_id)
    with transaction.atomic():
        policy = _locked(policy_id)
        before = _described(policy)
        after = _described(draft)
        changes = {key: [before[key], after[key]] for key in after if before[key] != after[key]}
        if not changes:
            return policy
        for key in changes:
            setattr(policy, key, getattr(draft, key))
        _save(policy)
        audit.record(
            user,
            "policy_change",
            target=f"policy {policy.name}",
            details={"fields": sorted(changes), "changes": changes},
        )
    return policy


def policy_set_enabled(policy_id: int, *, enabled: bool, user: Actor) -> RetentionPolicy:
    """Switch whether the periodic job applies the policy.

    Raises:
        Forbidden: ``user`` may not change retention.
        NotFound: no policy has that id.
        Conflict: it is already in that state (a page older than the change).
    """
    authz.require(user, "policy_change", target=f"policy {policy_id}")
    with transaction.atomic():
        policy = _locked(policy_id)
        if policy.enabled == enabled:
            state = "enabled" if enabled else "disabled"
            raise Conflict(f"The policy {policy.name} is already {state}.")
        policy.enabled = enabled
        policy.save(update_fields=["enabled", "updated_at"])
        audit.record(
            user,
            "policy_change",
            target=f"policy {policy.name}",
            details={"fields": ["enabled"], "changes": {"enabled": [not enabled, enabled]}},
        )
    return policy


def policy_apply(policy_id: int, *, dry_run: bool, user: Actor) -> retention.PruneReport:
    """Apply one policy now, enabled or not (``checkpoint_prune`` audits a real run).

    Raises:
        Forbidden: ``user`` may not prune.
        NotFound: no policy has that id.
    """
    authz.require(user, "prune", target=f"policy {policy_id}")
    policy = (
        RetentionPolicy.objects.filter(pk=policy_id).first() if 0 < policy_id <= MAX_ID else None
    )
    if policy is None:
        raise NotFound(f"No retention policy has the id {policy_id}.")
    return retention.checkpoint_prune(policy=policy, dry_run=dry_run, user=user)[0]


def _locked(policy_id: int) -> RetentionPolicy:
    found = RetentionPolicy.objects.select_for_update().filter(pk=policy_id)
    policy = found.first() if 0 < policy_id <= MAX_ID else None
    if policy is None:
        raise NotFound(f"No retention policy has the id {policy_id}.")
    return policy


def _save(policy: RetentionPolicy) -> None:
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction stays usable
            policy.save()
    except IntegrityError:
        # Two admins saving the same new name at once: the unique constraint decided.
        raise InvalidInput(
            f"A policy named {policy.name!r} exists already.",
            errors={"name": f"A policy named {policy.name!r} exists already."},
        ) from None


def _described(policy: RetentionPolicy) -> dict[str, Any]:
    return {field.name: getattr(policy, field.name) for field in dataclasses.fields(PolicySpec)}
