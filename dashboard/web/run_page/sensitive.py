"""The "Sensitive fields" card (on the run page and a checkpoint's page) and its Reveal
buttons: which fields show masked, and the value of one, for those who may see it."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard import services
from dashboard.access.masking import Masked
from dashboard.core.types import Actor
from dashboard.models import WorkflowRun
from dashboard.renderers.diff_values import text
from dashboard.web.access import page_view

__all__ = ["masked_context", "run_reveal"]

CARD = "components/masked_fields.html"


def masked_context(
    run: WorkflowRun,
    user: Actor,
    checkpoint_id: str = "",
    fields: list[Masked] | None = None,
) -> dict[str, Any]:
    """The card's context: the masked fields of the run's input and output, or of a
    checkpoint (``fields``, as its page masked them), and whether ``user`` may reveal them."""
    return {
        "masked_fields": services.masked_fields(run) if fields is None else fields,
        "may_reveal": services.can(user, "reveal", run.workflow_name),
        "masked_checkpoint_id": checkpoint_id,
        "masked_run_id": run.pk,
    }


@page_view("POST")
def run_reveal(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    """One field's value in place of its mask (htmx swaps it into its row), recorded in the
    audit log; a refusal is a sentence in the same place, with its status."""
    try:
        found = services.reveal(
            run_id,
            path=request.POST.get("path", ""),
            checkpoint_id=request.POST.get("checkpoint_id", ""),
            user=request.user,
        )
    except services.ServiceError as exc:
        return render(
            request, "components/revealed.html", {"error": exc.message}, status=exc.status
        )
    context = {"path": found.path, "value": text(found.value, limit=None)}
    response = render(request, "components/revealed.html", context)
    response["Cache-Control"] = "no-store"
    return response
