"""dashboard.web.context_processors: the nav badge count."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from dashboard.web.context_processors import pending_approvals


def test_pending_approvals_is_zero_without_a_query_for_anonymous_visitors() -> None:
    request = RequestFactory().get("/login/")
    request.user = AnonymousUser()
    assert pending_approvals(request) == {"pending_approval_count": 0}


@pytest.mark.django_db
def test_pending_approvals_counts_lazily_once_per_render(role_user: Callable[..., Any]) -> None:
    request = RequestFactory().get("/")
    request.user = User.objects.get(pk=role_user("operator", "Operator").pk)  # nothing cached yet
    with CaptureQueriesContext(connection) as queries:
        count = pending_approvals(request)["pending_approval_count"]
        assert len(queries) == 0  # nothing until a template shows it
        assert str(count) == "0" and not count
    # The user's own and their roles' permissions (which workflows they see), then the count.
    assert len(queries) == 2
    assert str(count) == "0" and len(queries) == 2  # counted once per render
