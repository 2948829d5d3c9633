"""Keeping the price table: what each model's tokens cost, set and removed by an Admin, audited.

A price applies to the model calls committed after it is saved: a worker reads the table when
an attempt begins, and a call's cost is written with it, so changing a price never rewrites
what past runs cost.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from dashboard.access import audit, authz
from dashboard.core.errors import InvalidInput, NotFound
from dashboard.core.types import Actor, is_user
from dashboard.models import ModelPrice
from dashboard.services import amounts, validation

__all__ = ["MAX_PRICE", "price_delete", "price_set"]

# Per million tokens; the dearest models cost a few hundred. Beyond this is a typo.
MAX_PRICE = Decimal(100_000)
_MODEL_LIMIT = ModelPrice._meta.get_field("model").max_length or 200


def _model(value: object, errors: dict[str, str]) -> str:
    if not isinstance(value, str):
        errors["model"] = "Enter the model's name."
        return ""
    name = value.strip()
    found = validation.unstorable(name)
    if found is not None:
        errors["model"] = f"It {found[1]}."
    elif not name:
        errors["model"] = "Enter the model's name, as the model reports it (e.g. gpt-4o-mini)."
    elif len(name) > _MODEL_LIMIT:
        errors["model"] = f"At most {_MODEL_LIMIT} characters (this is {len(name)})."
    return name


def _price(value: object, field: str, errors: dict[str, str]) -> Decimal:
    return amounts.decimal_amount(
        value,
        field,
        errors,
        noun="a price",
        example="0.15",
        maximum=MAX_PRICE,
        places=4,
        unit=" per million tokens",
    )


def price_set(
    model: object,
    *,
    input_per_million: object,
    output_per_million: object,
    user: Actor,
    new: bool = False,
) -> ModelPrice:
    """Create or change a model's price; with ``new``, only create it (a "new price" form
    must not overwrite the price someone set for the same model).

    Raises:
        Forbidden: ``user`` may not change prices (an Admin's job).
        InvalidInput: a field does not fit (one message per field), or ``new`` and the model
            has a price already.
    """
    authz.require(user, "price_change", target="model prices")
    errors: dict[str, str] = {}
    name = _model(model, errors)
    prices = (
        _price(input_per_million, "input_per_million", errors),
        _price(output_per_million, "output_per_million", errors),
    )
    if errors:
        raise InvalidInput("The price was not saved.", errors=errors)
    with transaction.atomic():
        row, created = ModelPrice.objects.select_for_update().get_or_create(
            model=name,
            defaults={
                "input_per_million": prices[0],
                "output_per_million": prices[1],
                "updated_by": user if is_user(user) else None,
            },
        )
        if new and not created:
            raise InvalidInput(
                "The price was not saved.",
                errors={"model": "This model has a price already: edit that one."},
            )
        before = (row.input_per_million, row.output_per_million)
        if not created and before == prices:
            return row  # nothing changed: nothing written, nothing recorded
        if not created:
            row.input_per_million, row.output_per_million = prices
            row.updated_by = user if is_user(user) else None
            row.updated_at = timezone.now()
            row.save()
        audit.record(
            user,
            "price_change",
            target=f"model {name}",
            details={
                "created": created,
                "input_per_million": str(prices[0]),
                "output_per_million": str(prices[1]),
                **({} if created else {"was": [str(before[0]), str(before[1])]}),
            },
        )
    return row


def price_delete(model: str, *, user: Actor) -> None:
    """Remove a model's price: its later calls count tokens but no cost.

    Raises:
        Forbidden: ``user`` may not change prices.
        NotFound: the model has no price.
    """
    authz.require(user, "price_change", target="model prices")
    with transaction.atomic():
        deleted, _ = ModelPrice.objects.filter(model=model).delete()
        if not deleted:
            raise NotFound(f"No price is set for {validation.printable(model)[:200]}.")
        audit.record(user, "price_change", target=f"model {model}", details={"deleted": True})
