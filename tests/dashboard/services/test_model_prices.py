"""The price table: an Admin sets what models cost, every change validated and audited."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from dashboard import services
from dashboard.models import AuditEntry, ModelPrice

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user(role_user: Callable[..., Any]) -> Any:
    return role_user("ada", "Admin", is_staff=True)


@pytest.fixture
def operator_user(role_user: Callable[..., Any]) -> Any:
    return role_user("olga", "Operator", is_staff=True)


def price_changes() -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action="price_change").order_by("id"))


def test_an_admin_sets_and_changes_a_price_and_each_change_is_audited(admin_user: Any) -> None:
    services.price_set(
        "gpt-4o-mini", input_per_million="0.15", output_per_million="0.6", user=admin_user
    )
    services.price_set("gpt-4o-mini", input_per_million=0.15, output_per_million=2, user=admin_user)

    price = ModelPrice.objects.get(model="gpt-4o-mini")
    assert (price.input_per_million, price.output_per_million) == (Decimal("0.15"), Decimal(2))
    assert price.updated_by == admin_user
    first, second = price_changes()
    assert first.details["created"] is True
    assert second.details == {
        "created": False,
        "input_per_million": "0.15",
        "output_per_million": "2",
        "was": ["0.1500", "0.6000"],
    }


def test_saving_the_same_price_again_records_nothing(admin_user: Any) -> None:
    services.price_set("m", input_per_million="1", output_per_million="2", user=admin_user)
    services.price_set("m", input_per_million="1.0", output_per_million="2.00", user=admin_user)
    assert len(price_changes()) == 1


def test_only_an_admin_may_change_prices(operator_user: Any) -> None:
    with pytest.raises(services.Forbidden):
        services.price_set("m", input_per_million="1", output_per_million="1", user=operator_user)
    assert not ModelPrice.objects.exists()


@pytest.mark.parametrize(
    ("model", "input_price", "field", "says"),
    [
        ("", "1", "model", "Enter the model's name"),
        ("gpt\ud800", "1", "model", "lone surrogate"),
        ("m" * 201, "1", "model", "At most 200 characters"),
        ("m", "-1", "input_per_million", "cannot be negative"),
        ("m", "NaN", "input_per_million", "finite"),
        ("m", "Infinity", "input_per_million", "finite"),
        ("m", "cheap", "input_per_million", "Enter a price"),
        ("m", True, "input_per_million", "Enter a price"),
        ("m", "0.00001", "input_per_million", "four decimal places"),
        ("m", "1e9", "input_per_million", "At most 100,000"),
    ],
)
def test_a_price_that_does_not_fit_is_refused_naming_its_field(
    admin_user: Any, model: str, input_price: object, field: str, says: str
) -> None:
    with pytest.raises(services.InvalidInput) as refused:
        services.price_set(
            model, input_per_million=input_price, output_per_million="1", user=admin_user
        )
    assert says in refused.value.errors[field]
    assert not ModelPrice.objects.exists() and not price_changes()


def test_removing_a_price_is_audited_and_an_unknown_model_is_not_found(admin_user: Any) -> None:
    services.price_set("m", input_per_million="1", output_per_million="2", user=admin_user)
    services.price_delete("m", user=admin_user)

    assert not ModelPrice.objects.exists()
    assert price_changes()[-1].details == {"deleted": True}
    with pytest.raises(services.NotFound):
        services.price_delete("m", user=admin_user)


def test_the_admin_site_lists_prices_for_admins_only(
    client: Any, admin_user: Any, operator_user: Any
) -> None:
    services.price_set(
        "gpt-4o-mini", input_per_million="0.15", output_per_million="0.6", user=admin_user
    )
    client.force_login(admin_user)
    page = client.get("/admin/dashboard/modelprice/")
    assert page.status_code == 200 and b"gpt-4o-mini" in page.content

    client.force_login(operator_user)
    assert client.get("/admin/dashboard/modelprice/").status_code == 403


def test_the_admin_site_saves_through_the_service(client: Any, admin_user: Any) -> None:
    client.force_login(admin_user)
    answer = client.post(
        "/admin/dashboard/modelprice/add/",
        {"model": "local", "input_per_million": "1.5", "output_per_million": "3"},
    )
    assert answer.status_code == 302, answer.content[:500]
    assert ModelPrice.objects.get(model="local").output_per_million == 3
    assert price_changes()[-1].actor == admin_user
