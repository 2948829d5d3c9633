"""The audit log for admins (``view_auditentry``): filtered by actor, action, outcome, run, date
range and text in the target; newest first, a keyset page at a time; each row links to its
run while the run exists. The same filters export as CSV or JSON lines
(``selectors.audit_export``), streamed in batches.

Filters that cannot mean anything (text no database can store, a run id that is no UUID, an
impossible date, a range that ends before it starts) answer 400 with the message beside the
field, and no rows: an unfiltered log shown as if it were the answer would mislead.

The export is a ``StreamingHttpResponse`` fed by an async iterator under ASGI (Daphne would
otherwise read a sync iterator whole into memory, with a warning) and by the same rows as a
plain iterator under WSGI. Cells that a spreadsheet would run as a formula are defused.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import AsyncIterator, Iterator
from typing import cast

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse

from dashboard import catalog, services
from dashboard.models import AuditEntry
from dashboard.selectors import audit_export as audit_export_rows
from dashboard.selectors import audit_log
from dashboard.web.access import page_view
from dashboard.web.operations.forms import AuditFilterForm
from dashboard.web.pagination import decode_cursor, page_links

TEMPLATE = "dashboard/audit.html"
PAGE_SIZE = 50
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
        "export_jsonl_url": f"{export}?{_with_format(query, 'jsonl')}",
        "workflows": catalog.names(),
        "nav_section": "audit",
    }
    return render(request, TEMPLATE, context)


def _invalid(request: HttpRequest, form: AuditFilterForm) -> HttpResponse:
    """The filters with their errors and no rows: an unfiltered log would pass for the answer."""
    context = {
        "form": form,
        "actions": audit_log.KNOWN_AUDIT_ACTIONS,
        "workflows": catalog.names(),
        "invalid": True,
        "nav_section": "audit",
    }
    return render(request, TEMPLATE, context, status=400)


def _with_format(query: QueryDict, export_format: str) -> str:
    query = query.copy()
    query["format"] = export_format
    return query.urlencode()


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
    export_format = request.GET.get("format") or "csv"
    if export_format not in audit_export_rows.EXPORT_FORMATS:
        form.is_valid()
        form.add_error(None, "Export as csv or jsonl.")
        return _invalid(request, form)
    if not form.is_valid():
        return _invalid(request, form)
    return streamed_export(request, form.filters(), _asked(form), export_format)


def _asked(form: AuditFilterForm) -> dict[str, str]:
    return {key: str(value) for key, value in form.cleaned_data.items() if value not in (None, "")}


def streamed_export(
    request: HttpRequest,
    filters: audit_log.AuditFilters,
    asked: dict[str, str],
    export_format: str,
) -> HttpResponse:
    """The export as a download, streamed; taking the log out of the system is itself on the
    record, with what was asked for."""
    services.audit.record(
        request.user,
        "audit_export",
        target=f"audit log ({export_format})",
        details={"filters": asked, "format": export_format},
    )
    download = audit_export_rows.download(filters, export_format)
    lines = download.lines
    content: Iterator[bytes] | AsyncIterator[bytes] = (
        audit_export_rows.async_lines(lines) if isinstance(request, ASGIRequest) else lines
    )
    response = StreamingHttpResponse(content, content_type=download.content_type)
    response["Content-Disposition"] = f'attachment; filename="{download.filename}"'
    # page_view is typed for HttpResponse and passes any response through unchanged.
    return cast(HttpResponse, response)
