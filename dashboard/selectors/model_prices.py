"""The price table as a worker reads it (what each model's tokens cost, and a reply's cost),
and as the prices page lists it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from decimal import Decimal

from dashboard.models import ModelPrice

__all__ = ["PriceTable", "price_get", "price_rows", "price_table"]

_MILLION = Decimal(1_000_000)
# A run's cost column keeps six places; a reply's cost is rounded to them once, here.
_PLACES = Decimal("0.000001")


@dataclasses.dataclass(frozen=True)
class PriceTable:
    """Per model, the (input, output) price of a million tokens."""

    per_million: Mapping[str, tuple[Decimal, Decimal]]

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> Decimal | None:
        """What a reply cost, None when its model has no price (it counts tokens, not cost)."""
        prices = self.per_million.get(model)
        if prices is None:
            return None
        input_price, output_price = prices
        total = (input_price * input_tokens + output_price * output_tokens) / _MILLION
        return total.quantize(_PLACES)


def price_table() -> PriceTable:
    """The whole table, in one query (a worker reads it once per attempt)."""
    return PriceTable(
        {
            model: (input_price, output_price)
            for model, input_price, output_price in ModelPrice.objects.values_list(
                "model", "input_per_million", "output_per_million"
            )
        }
    )


def price_rows() -> list[ModelPrice]:
    """Every price, by model, with who set it."""
    return list(ModelPrice.objects.select_related("updated_by").order_by("model"))


def price_get(price_id: int) -> ModelPrice | None:
    return ModelPrice.objects.filter(pk=price_id).first()
