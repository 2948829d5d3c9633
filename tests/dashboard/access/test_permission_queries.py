"""dashboard.access.permissions.RolePermissions: the same permissions as Django's ModelBackend,
read with one query instead of two, and nothing else about signing in changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


def fresh(user: User) -> User:
    """The user as a new request loads it: no permissions cached on the object."""
    return User.objects.get(pk=user.pk)


def own_permission(user: User, codename: str) -> None:
    user.user_permissions.add(Permission.objects.get(codename=codename))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda role_user: role_user("op", "Operator"), id="a role"),
        pytest.param(lambda role_user: role_user("two", "Viewer", "Approver"), id="two roles"),
        pytest.param(lambda role_user: role_user("none"), id="no role"),
    ],
)
def test_the_permissions_are_model_backends(
    role_user: Callable[..., Any], make: Callable[[Callable[..., Any]], User]
) -> None:
    user = make(role_user)
    own_permission(user, "view_auditentry")  # one of the user's own, beside the roles'
    ours = fresh(user).get_all_permissions()
    django = ModelBackend().get_all_permissions(fresh(user))
    assert ours == django and "dashboard.view_auditentry" in ours


def test_superusers_hold_every_permission_and_inactive_users_none(
    role_user: Callable[..., Any],
) -> None:
    boss = User.objects.create_superuser("boss", password="boss")
    assert fresh(boss).get_all_permissions() == ModelBackend().get_all_permissions(fresh(boss))
    gone = role_user("gone", "Admin")
    gone.is_active = False
    gone.save()
    assert fresh(gone).get_all_permissions() == set()
    assert not fresh(gone).has_perm("dashboard.view_workflowrun")


def test_checking_permissions_costs_one_query_per_request(role_user: Callable[..., Any]) -> None:
    user = fresh(role_user("op", "Operator"))
    with CaptureQueriesContext(connection) as queries:
        assert user.has_perm("dashboard.operate_run")
        assert user.has_perm("dashboard.view_workflowrun")
        assert not user.has_perm("dashboard.manage_retention")  # asks every backend: still cached
    assert len(queries) == 1


def test_a_role_granted_or_removed_counts_from_the_next_request(
    role_user: Callable[..., Any],
) -> None:
    user = role_user("late", "Viewer")
    assert not fresh(user).has_perm("dashboard.operate_run")
    own_permission(user, "operate_run")
    assert fresh(user).has_perm("dashboard.operate_run")
    user.user_permissions.clear()
    assert not fresh(user).has_perm("dashboard.operate_run")


def test_signing_in_with_a_password_is_model_backends(role_user: Callable[..., Any]) -> None:
    role_user("ann", "Operator")
    client = Client()
    assert not client.login(username="ann", password="wrong")
    assert client.login(username="ann", password="ann")
    assert client.session[BACKEND_SESSION_KEY] == "django.contrib.auth.backends.ModelBackend"
    assert client.get("/").status_code == 200


def test_workflow_grants_come_with_the_same_query(role_user: Callable[..., Any]) -> None:
    from django.contrib.auth.models import Group

    from dashboard.access import authz
    from dashboard.models import WorkflowGrant

    user = role_user("refunds", "Viewer")
    WorkflowGrant.objects.create(
        user=user, role=Group.objects.get(name="Approver"), workflow_name="refund"
    )
    user = fresh(user)
    with CaptureQueriesContext(connection) as queries:
        assert authz.can(user, "view")
        assert authz.can(user, "approve", "refund")
        assert not authz.can(user, "approve", "travel")
        assert not authz.can(user, "cancel", "refund")
        assert authz.visible_workflows(user, "approve") == frozenset({"refund"})
    assert len(queries) == 1
    assert "dashboard.decide_approval" not in user.get_all_permissions()  # by grant only
