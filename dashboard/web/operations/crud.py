"""Create, edit and save for the operations' records: alert rules, schedules and retention
policies, which each had the same pages written out once more.

A record has a list page, a form page (new, or one record edited) and a save that runs the
posted form through the services: types first (the form: 422 with the field errors), then the
service's own rule (``ServiceError``: its messages beside the fields they name, the 400s of
bad values as 422, refusals with their own status), then a message and back to the list. What
differs between the three (the form, the services, the words, what else the form page shows)
is a ``Crud``'s fields; the templates share ``components/crud_form.html`` the same way.

The refusals come first, before a form is read: ``refused`` for the pages only admins may
open (the refusal recorded as ``access.page_view`` records a refused view), ``forbidden`` for
a change through the service's own check (which records it under the action's name).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from dashboard import services
from dashboard.models import AuditEntry

__all__ = ["Crud", "RecordForm", "forbidden", "refused", "refusal_status"]


class RecordForm(Protocol):
    """What a record's form offers the helper besides being a Django form."""

    def is_valid(self) -> bool: ...

    def spec(self) -> Any: ...

    def add_service_errors(self, errors: dict[str, str]) -> None: ...

    def add_error(self, field: str | None, error: str) -> None: ...


def _nothing(record: Any) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Crud:
    """One kind of record's form page and save.

    ``form`` is the form class (``initial_for(record)`` gives an edited record's values);
    ``create(spec, user=)`` and ``update(pk, spec, user=)`` are the services; ``saved`` says
    what was saved; ``extra`` adds to the form page's context (a schedule's recent ticks).
    The words and URL names are the scaffold's (``components/crud_form.html``, as ``crud``).
    """

    form: Any
    create: Callable[..., Any]
    update: Callable[..., Any]
    template: str
    record_name: str  # the record's name in the form page's context: "rule", "schedule"
    saved: Callable[[Any], str]
    nav_section: str
    section: str  # the list page's name in the breadcrumbs: "Alerts"
    noun: str  # "alert rule": "New alert rule", "Edit alert rule <name>", "Save alert rule"
    new_title: str  # the new record's page title: "New retention policy"
    form_id: str
    list_url: str  # where a save goes back to: "dashboard:alerts"
    new_url: str
    edit_url: str
    extra: Callable[[Any], dict[str, Any]] = field(default=_nothing)

    def new(self, request: HttpRequest) -> HttpResponse:
        """The empty form, or the posted one saved as a new record."""
        if request.method == "GET":
            return self.form_page(request, self.form(), None)
        return self.save(request, None)

    def edit(self, request: HttpRequest, record: Any) -> HttpResponse:
        """The form with ``record``'s values, or the posted one saved over it."""
        if request.method == "GET":
            return self.form_page(request, self.form(initial=self.form.initial_for(record)), record)
        return self.save(request, record)

    def save(self, request: HttpRequest, record: Any | None) -> HttpResponse:
        """The posted form through ``create`` (``record`` None) or ``update``."""
        form: RecordForm = self.form(request.POST)
        if not form.is_valid():
            return self.form_page(request, form, record, status=422)
        try:
            if record is None:
                saved = self.create(form.spec(), user=request.user)
            else:
                saved = self.update(record.pk, form.spec(), user=request.user)
        except services.ServiceError as exc:
            if exc.errors:
                form.add_service_errors(exc.errors)
            else:
                form.add_error(None, exc.message)
            return self.form_page(request, form, record, status=refusal_status(exc))
        messages.success(request, self.saved(saved))
        return redirect(self.list_url)

    def form_page(
        self, request: HttpRequest, form: Any, record: Any | None, *, status: int = 200
    ) -> HttpResponse:
        context = {
            "form": form,
            self.record_name: record,
            "item": record,
            "crud": self,
            "nav_section": self.nav_section,
            **self.extra(record),
        }
        return render(request, self.template, context, status=status)


def refusal_status(exc: services.ServiceError) -> int:
    """A refused save's status: bad values (400) are an unprocessable form (422)."""
    return 422 if exc.status == 400 else exc.status


def refused(
    request: HttpRequest, action: str, page: Callable[[], HttpResponse]
) -> HttpResponse | None:
    """``page`` (the refusal) for a user who may not ``action``, with the refused view
    recorded like any other page's; None for one who may."""
    if services.can(request.user, action):
        return None
    target = f"page {request.path}"[:300]
    services.audit.record(request.user, "view", outcome=AuditEntry.DENIED, target=target)
    return page()


def forbidden(
    request: HttpRequest, action: str, target: str, page: Callable[[str], HttpResponse]
) -> HttpResponse | None:
    """``page(message)`` when the service's own check refuses ``action`` on ``target`` (the
    check records the refusal); None when it allows it."""
    try:
        services.require(request.user, action, target=target)
    except services.Forbidden as exc:
        return page(exc.message)
    return None
