"""The audit log for admins (``view_auditentry``): filtered by actor, action, outcome, run, date
range and text in the target; newest first, a keyset page at a time; each row links to its
run while the run exists. The same filters export as CSV, streamed in batches.

Filters that cannot mean anything (text no database can store, a run id that is no UUID, an
impossible date, a range that ends before it starts) answer 400 with the message beside the
field, and no rows: an unfiltered log shown as if it were the answer would mislead.

The export is a ``StreamingHttpResponse`` fed by an async iterator under ASGI (Daphne would
otherwise read a sync iterator whole into memory, with a warning) and by the same rows as a
plain iterator under WSGI. Cells that a spreadsheet would run as a formula are defused.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import AsyncIterator, Iterator
from typing import cast

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from dashboard import services
from dashboard.models import AuditEntry
from dashboard.selectors import audit_log
from dashboard.web.access import page_view
from dashboard.web.operations.forms import AuditFilterForm
from dashboard.web.pagination import decode_cursor, page_links

TEMPLATE = "dashboard/audit.html"
PAGE_SIZE = 50
EXPORT_BATCH = 500
PERMISSION = "dashboard.view_auditentry"
DENIED = "The audit log is for admins: your role may not read it."


def _refused(request: HttpRequest) -> HttpResponse | None:
    """Admins only; a refusal is recorded like any other page's."""
    if services.can(request.user, "view") and request.user.has_perm(PERMISSION):
        return None
    target = f"page {request.path}"[:300]
    services.audit.record(request.user, "view", outcome=AuditEntry.DENIED, target=target)
    return render(request, TEMPLATE, {"denied": DENIED, "nav_section": "audit"}, status=403)


@page_view("GET")
def audit(request: HttpRequest) -> HttpResponse:
    if refused := _refused(request):
        return refused
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return _invalid(request, form)
    filters = form.filters()
    page = audit_log.audit_log_page(
        filters, after=_cursor(request, "after"), before=_cursor(request, "before"), limit=PAGE_SIZE
    )
    query = request.GET.copy()
    for name in ("after", "before"):
        query.pop(name, None)
    export = reverse("dashboard:audit_export")
    context = {
        "form": form,
        "actions": audit_log.KNOWN_AUDIT_ACTIONS,
        "rows": [(entry, _details(entry.details)) for entry in page.rows],
        "page": page_links(
            request, page, lambda entry: (entry.created_at, entry.pk), path=request.path
        ),
        "filtered": bool(filters),
        "export_url": f"{export}?{query.urlencode()}" if query else export,
        "nav_section": "audit",
    }
    return render(request, TEMPLATE, context)


def _invalid(request: HttpRequest, form: AuditFilterForm) -> HttpResponse:
    """The filters with their errors and no rows: an unfiltered log would pass for the answer."""
    context = {
        "form": form,
        "actions": audit_log.KNOWN_AUDIT_ACTIONS,
        "invalid": True,
        "nav_section": "audit",
    }
    return render(request, TEMPLATE, context, status=400)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _cursor(request: HttpRequest, name: str) -> tuple[dt.datetime, int] | None:
    """A page cursor; one no row could have written (an id beyond any key, a time at the edge
    of the calendar) is ignored like any other bad cursor, not sent to the database."""
    found = decode_cursor(request.GET.get(name), int)
    if found is None or not 0 < found[1] < 2**63:
        return None
    try:
        found[0].astimezone(dt.UTC)  # what the database is sent; year 1 or 9999 may overflow
    except OverflowError:
        return None
    return found


def _details(details: object) -> str:
    if not details:
        return ""
    text = _json(details)
    return text if len(text) <= 160 else f"{text[:159]}…"


@page_view("GET")
def audit_export(request: HttpRequest) -> HttpResponse:
    if refused := _refused(request):
        return refused
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        return _invalid(request, form)
    filters = form.filters()
    # Taking the log out of the system is itself on the record, with what was asked for.
    asked = {key: str(value) for key, value in form.cleaned_data.items() if value not in (None, "")}
    services.audit.record(
        request.user, "audit_export", target="audit log (CSV)", details={"filters": asked}
    )
    lines = _csv_lines(filters)
    content: Iterator[bytes] | AsyncIterator[bytes] = (
        _async_lines(lines) if isinstance(request, ASGIRequest) else lines
    )
    response = StreamingHttpResponse(content, content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
    # page_view is typed for HttpResponse and passes any response through unchanged.
    return cast(HttpResponse, response)


COLUMNS = (
    "created_at",
    "actor",
    "action",
    "outcome",
    "run_id",
    "workflow",
    "target",
    "checkpoint_before",
    "checkpoint_after",
    "ip",
    "user_agent",
    "details",
)
# A spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection");
# a leading apostrophe makes it text. Tab and carriage return start formulas in some too.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def defuse(cell: str) -> str:
    return f"'{cell}" if cell.startswith(FORMULA_STARTS) else cell


class _Line:
    """The file ``csv.writer`` writes to: it hands back each line instead of storing it."""

    def write(self, text: str) -> str:
        return text


def _csv_lines(filters: audit_log.AuditFilters) -> Iterator[bytes]:
    writer = csv.writer(_Line())
    yield writer.writerow(COLUMNS).encode()
    for batch in audit_log.audit_log_batches(filters, batch_size=EXPORT_BATCH):
        lines = [writer.writerow([defuse(cell) for cell in _cells(entry)]) for entry in batch]
        yield "".join(lines).encode("utf-8", errors="replace")


def _cells(entry: AuditEntry) -> list[str]:
    return [
        entry.created_at.isoformat(),
        entry.actor_name,
        entry.action,
        entry.outcome,
        str(entry.run_id or ""),
        entry.workflow_name,
        entry.target,
        entry.checkpoint_before,
        entry.checkpoint_after,
        entry.ip or "",
        entry.user_agent,
        _json(entry.details) if entry.details else "",
    ]


async def _async_lines(lines: Iterator[bytes]) -> AsyncIterator[bytes]:
    # Each batch is read by Django's sync thread (thread_sensitive), where the view ran.
    step = sync_to_async(_next, thread_sensitive=True)
    while (chunk := await step(lines)) is not None:
        yield chunk


def _next(lines: Iterator[bytes]) -> bytes | None:
    return next(lines, None)
