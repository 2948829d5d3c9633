"""Fixtures the services' tests of deciding share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def people(services_transactional_db: str, role_user: Callable[..., Any]) -> dict[str, Any]:
    """olga (Operator), abe, bea and cal (Approvers), on SQLite and on PostgreSQL."""
    return {
        "olga": role_user("olga", "Operator"),
        "abe": role_user("abe", "Approver"),
        "bea": role_user("bea", "Approver"),
        "cal": role_user("cal", "Approver"),
    }
