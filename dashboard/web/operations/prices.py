"""The price table for admins (``price_change``): what each model's tokens cost, per million,
listed, added, changed and removed on the dashboard itself (the admin site keeps its own form
on the same services).

A run's cost is its model calls priced when they were committed, so a change here prices the
calls that come after it and never rewrites what past runs cost. Another role gets a 403 with
the reason and the refusal in the audit log; every change goes through
``services.model_prices``, which checks the role again, validates and audits.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from dashboard import selectors, services
from dashboard.models import ModelPrice
from dashboard.web.access import page_view
from dashboard.web.operations.crud import Crud, refused
from dashboard.web.operations.forms import PriceForm

PAGE = "dashboard/prices.html"
FORM = "dashboard/price_form.html"
DENIED = "Model prices are kept by admins: your role may not see or change them."


def _create(spec: dict[str, str], *, user: Any) -> ModelPrice:
    return services.price_set(
        spec["model"],
        input_per_million=spec["input_per_million"],
        output_per_million=spec["output_per_million"],
        user=user,
        new=True,
    )


def _update(price_id: int, spec: dict[str, str], *, user: Any) -> ModelPrice:
    price = selectors.price_get(price_id)
    if price is None:
        raise services.NotFound(f"No price has the id {price_id}.")
    if spec["model"].strip() != price.model:
        raise services.InvalidInput(
            "The price was not saved.",
            errors={"model": "A price's model stays the same: add a new price for another."},
        )
    return services.price_set(
        price.model,
        input_per_million=spec["input_per_million"],
        output_per_million=spec["output_per_million"],
        user=user,
    )


PRICES = Crud(
    form=PriceForm,
    create=_create,
    update=_update,
    template=FORM,
    record_name="price",
    saved=lambda price: f"Price of {price.model} saved.",
    nav_section="prices",
    section="Model prices",
    noun="price",
    new_title="New model price",
    form_id="price-form",
    list_url="dashboard:prices",
    new_url="dashboard:price_new",
    edit_url="dashboard:price_edit",
)


def _refused(request: HttpRequest) -> HttpResponse | None:
    return refused(request, "price_change", lambda: _page(request, status=403, denied=DENIED))


def _page(
    request: HttpRequest, *, status: int = 200, error: str = "", denied: str = ""
) -> HttpResponse:
    context: dict[str, Any] = {"nav_section": "prices", "denied": denied, "error": error}
    if not denied:
        context["prices"] = selectors.price_rows()
    return render(request, PAGE, context, status=status)


@page_view("GET")
def price_list(request: HttpRequest) -> HttpResponse:
    return _refused(request) or _page(request)


@page_view("GET", "POST")
def price_new(request: HttpRequest) -> HttpResponse:
    return _refused(request) or PRICES.new(request)


@page_view("GET", "POST")
def price_edit(request: HttpRequest, price_id: int) -> HttpResponse:
    if denied := _refused(request):
        return denied
    price = selectors.price_get(price_id)
    if price is None:
        return _page(request, status=404, error=f"No price has the id {price_id}.")
    return PRICES.edit(request, price)


@page_view("POST")
def price_delete(request: HttpRequest, price_id: int) -> HttpResponse:
    if denied := _refused(request):
        return denied
    price = selectors.price_get(price_id)
    if price is None:
        return _page(request, status=404, error=f"No price has the id {price_id}.")
    try:
        services.price_delete(price.model, user=request.user)
    except services.ServiceError as exc:
        return _page(request, status=exc.status, error=exc.message)
    messages.success(request, f"Price of {price.model} removed: its later calls count no cost.")
    return redirect("dashboard:prices")
