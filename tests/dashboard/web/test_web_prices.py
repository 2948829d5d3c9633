"""The price table's pages (``/prices/``): admins list, add, change and remove model prices
through ``services.model_prices`` (validated, audited); hostile amounts answer 422 beside
their field; other roles get a 403 saying why, recorded, and no nav link."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from dashboard.models import AuditEntry, ModelPrice

pytestmark = pytest.mark.django_db


def form(**changes: str) -> dict[str, str]:
    return {"model": "gpt-4o-mini", "input_per_million": "0.15", "output_per_million": "0.6"} | (
        changes
    )


def price_changes() -> list[dict[str, Any]]:
    return list(
        AuditEntry.objects.filter(action="price_change")
        .order_by("pk")
        .values_list("details", flat=True)
    )


def test_an_admin_adds_changes_and_removes_a_price_each_audited(
    admin_role_client: Client,
) -> None:
    assert "No prices yet" in admin_role_client.get("/prices/").content.decode()
    added = admin_role_client.post("/prices/new/", form())
    assert added.status_code == 302 and added.url == "/prices/"
    price = ModelPrice.objects.get()
    assert (price.input_per_million, price.output_per_million) == (Decimal("0.15"), Decimal("0.6"))
    page = admin_role_client.get("/prices/").content.decode()
    assert 'data-model-price="gpt-4o-mini"' in page and "0.1500" in page

    edit = admin_role_client.get(f"/prices/{price.pk}/edit/").content.decode()
    assert '<code id="price-model">gpt-4o-mini</code>' in edit and 'value="0.1500"' in edit
    removal = re.search(
        r'<form method="post" action="/prices/\d+/delete/".*?</form>', edit, re.DOTALL
    )
    assert removal is not None and 'name="csrfmiddlewaretoken"' in removal[0]
    changed = admin_role_client.post(f"/prices/{price.pk}/edit/", form(output_per_million="1.2"))
    assert changed.status_code == 302
    price.refresh_from_db()
    assert price.output_per_million == Decimal("1.2")

    removed = admin_role_client.post(f"/prices/{price.pk}/delete/")
    assert removed.status_code == 302 and not ModelPrice.objects.exists()
    assert [(d.get("created"), d.get("deleted")) for d in price_changes()] == [
        (True, None),
        (False, None),
        (None, True),
    ]
    assert price_changes()[1]["was"] == ["0.1500", "0.6000"]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("input_per_million", "NaN", "Enter a finite price"),
        ("input_per_million", "-0.5", "A price cannot be negative"),
        ("output_per_million", "1e999", "At most 100,000 per million tokens"),
        ("output_per_million", "free", "Enter a price, such as 0.15"),
        ("output_per_million", "0.00001", "At most four decimal places"),
        ("output_per_million", "9" * 300, "Enter a price"),
        ("model", "   ", "This field is required"),
        ("model", "gpt\x00", "Null characters are not allowed"),
        ("model", "m" * 201, "At most 200 characters"),
    ],
)
def test_a_price_that_does_not_fit_answers_422_beside_its_field(
    admin_role_client: Client, field: str, value: str, says: str
) -> None:
    answer = admin_role_client.post("/prices/new/", form(**{field: value}))

    assert answer.status_code == 422
    html = answer.content.decode()
    assert f'id="id_{field}_error"' in html and says in html
    assert not ModelPrice.objects.exists() and not price_changes()


def test_a_new_price_for_a_priced_model_is_refused_and_an_edit_keeps_its_model(
    admin_role_client: Client,
) -> None:
    admin_role_client.post("/prices/new/", form())
    price = ModelPrice.objects.get()

    again = admin_role_client.post("/prices/new/", form(input_per_million="9"))
    assert again.status_code == 422 and "has a price already" in again.content.decode()
    renamed = admin_role_client.post(f"/prices/{price.pk}/edit/", form(model="other"))
    assert renamed.status_code == 422 and "stays the same" in renamed.content.decode()
    assert list(ModelPrice.objects.values_list("model", "input_per_million")) == [
        ("gpt-4o-mini", Decimal("0.15"))
    ]
    assert admin_role_client.get("/prices/999/edit/").status_code == 404
    assert admin_role_client.post("/prices/999/delete/").status_code == 404


@pytest.mark.parametrize("role", ["Viewer", "Operator", "Approver"])
def test_other_roles_get_403_with_the_reason_from_the_price_pages(
    client_as: Callable[..., Client], role: str
) -> None:
    price = ModelPrice.objects.create(
        model="m", input_per_million=Decimal(1), output_per_million=Decimal(2)
    )
    client = client_as(role)

    listed = client.get("/prices/")
    assert listed.status_code == 403 and "kept by admins" in listed.content.decode()
    assert client.post("/prices/new/", form()).status_code == 403
    assert client.post(f"/prices/{price.pk}/edit/", form(model="m")).status_code == 403
    assert client.post(f"/prices/{price.pk}/delete/").status_code == 403
    assert 'href="/prices/"' not in client.get("/").content.decode()  # no nav link either
    assert AuditEntry.objects.filter(outcome=AuditEntry.DENIED).count() == 4
    assert ModelPrice.objects.get().output_per_million == Decimal(2)
