"""A signed-in user's permissions in one query instead of Django's two (and the workflow
grants' third, ``authz.load_permissions``).

Every page and API call checks a permission (``authz.can``), and ``ModelBackend`` reads a
user's own permissions and their groups' (the roles) with a query each. ``RolePermissions``
stands before it in ``AUTHENTICATION_BACKENDS`` and reads both at once, into the per-request
cache ``ModelBackend`` itself keeps on the user object (``_perm_cache``), so the backends after
it answer from that cache without a query of their own. It checks no password (``ModelBackend``
after it does, once): signing in, and the sessions that name ``ModelBackend``, are unchanged.
It loads a session's user as ``ModelBackend`` would, for the sessions that name it (the test
client's ``force_login`` takes the first backend).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission

from dashboard.access import authz

__all__ = ["RolePermissions"]


class RolePermissions(ModelBackend):
    def authenticate(self, request: Any, *args: Any, **kwargs: Any) -> None:
        return None

    def get_all_permissions(self, user_obj: Any, obj: Any = None) -> set[str]:
        # ModelBackend's own rules: no object permissions, nothing for the inactive or anonymous.
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        cached: set[str] | None = getattr(user_obj, "_perm_cache", None)
        if cached is None:
            if user_obj.is_superuser:
                rows = Permission.objects.order_by().values_list(
                    "content_type__app_label", "codename"
                )
                cached = {f"{app_label}.{codename}" for app_label, codename in rows}
            else:
                cached = authz.load_permissions(user_obj)
            user_obj._perm_cache = cached
        return cached
