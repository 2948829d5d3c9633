"""Steps the inbox's page tests take the same way: read the panel, post a decision."""

from __future__ import annotations

from typing import Any

from django.test import Client

from dashboard.models import ApprovalRequest


def panel(client: Client, approval: ApprovalRequest) -> str:
    """The inbox's panel for ``approval``, as HTML."""
    page = client.get(f"/approvals/?request={approval.request_id}")
    assert page.status_code == 200
    return page.content.decode().split('id="approval-panel"', 1)[1]


def decide(client: Client, approval: ApprovalRequest, **fields: Any) -> Any:
    """Post the panel's decision form (as htmx does) with ``fields``."""
    url = f"/approvals/{approval.request_id}/decide/"
    return client.post(url, {"mode": "form", **fields}, HTTP_HX_REQUEST="true")
